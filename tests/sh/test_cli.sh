#!/bin/sh
# Command-line conventions: short options, `--`, recon help CMD, one-line
# errors with the nearest option or command, --version, output errors
# reported, status of a job that never ran.
. "$(dirname "$0")/lib.sh"
setup_example

expect_exit 0 "-V" "$RECON" -V
check "--version names the version, commit, drivers and data folder" \
	sh -c "grep -q '^recon [0-9.]* (git ' '$WORK/out' && grep -q '^drivers: csv sqlite' '$WORK/out' && grep -q '^data: /' '$WORK/out'"
# the commit is the one built: looked up at every build, not at configure time
if head=$(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null); then
	check "--version names the commit the source is at" \
		sh -c "grep -Eq '^recon [0-9.]* \\(git $head(\\+dirty)?\\)$' '$WORK/out'"
fi
expect_exit 0 "version" "$RECON" version
expect_exit 0 "recon help run" "$RECON" help run
check "help run shows run's usage" grep -q '^usage: recon run ' "$WORK/out"
expect_exit 0 "recon help validate" "$RECON" help validate
check "help validate has an example" grep -q '^example: recon validate' "$WORK/out"
expect_exit 0 "validate --help" "$RECON" validate --help
expect_exit 64 "a mistyped command" "$RECON" stauts
check "it names the nearest command" grep -q "^recon: unknown command 'stauts'; did you mean 'status'?" "$WORK/err"
check "and where help is" grep -q "^try 'recon --help'" "$WORK/err"
check "in two lines" test "$(wc -l < "$WORK/err")" = 2
expect_exit 64 "a mistyped option" "$RECON" validate --jbo "$JOB"
check "it names the nearest option" grep -q "unknown option '--jbo'; did you mean '--job'?" "$WORK/err"
check "and the command's help" grep -q "^try 'recon validate --help'" "$WORK/err"
check "in two lines" test "$(wc -l < "$WORK/err")" = 2
expect_exit 64 "a value missing" "$RECON" validate -j
check "one line says so" grep -q "option '-j' needs a value" "$WORK/err"
expect_exit 0 "short options (-j, -q)" "$RECON" validate -q -j "$JOB"
expect_exit 64 "-- ends the options" "$RECON" validate -j "$JOB" -- -q
check "what follows -- is an argument" grep -q "unexpected argument '-q'" "$WORK/err"
expect_exit 0 "status of a job that never ran" "$RECON" status -j "$JOB"
check "says so" grep -q "has never run" "$WORK/out"
expect_exit 0 "a run with short options" "$RECON" run -j "$JOB" -d 2024-01-16 -q
if [ -w /dev/full ]; then
	expect_exit 1 "diff to a full disk fails" sh -c "'$RECON' diff -j '$JOB' > /dev/full"
	check "and says why" grep -q "cannot write the output" "$WORK/err"
fi
expect_exit 0 "status after a run" "$RECON" status -j "$JOB"
finish
