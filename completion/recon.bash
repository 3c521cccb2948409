# bash completion for recon(1): commands, each command's options, and the
# values of --mode, --format and --class; --job completes .json files.
_recon()
{
	local cur prev cmd opts
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	cmd=${COMP_WORDS[1]}
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "run rerun diff status check tickets validate help version --help --version" -- "$cur"))
		return
	fi
	case $prev in
	--job|-j)
		COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur"))
		return ;;
	--mode|-m)
		COMPREPLY=($(compgen -W "t1 hot" -- "$cur"))
		return ;;
	--format)
		COMPREPLY=($(compgen -W "table jsonl csv" -- "$cur"))
		return ;;
	--class)
		COMPREPLY=($(compgen -W "missing extra stuck amount_mismatch status_mismatch duplicate" -- "$cur"))
		return ;;
	esac
	case $cmd in
	run) opts="--job --mode --date --dry-run --json --quiet --verbose --help" ;;
	rerun) opts="--job --from --to --dry-run --json --quiet --verbose --help" ;;
	diff) opts="--job --run --class --format --quiet --help" ;;
	status) opts="--job --json --quiet --help" ;;
	check) opts="--job --mode --max-lag --max-age --quiet --help" ;;
	tickets) opts="--job --format --quiet --help" ;;
	validate) opts="--job --quiet --help" ;;
	help) opts="run rerun diff status check tickets validate" ;;
	*) opts="" ;;
	esac
	COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _recon recon
