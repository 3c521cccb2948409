# bench/classify.awk: classifies the output of
#   join -t, -a1 -a2 -o auto -e '' <sorted statement> <sorted local flow>
# fields: 1 key | 2 txn id, 3 amount, 4 currency, 5 status, 6 time (upstream)
#         | 7 amount_cents, 8 status, 9 created_at (local)
# The rules are recon's (DESIGN "Classification") for the statuses bench/gen writes.
BEGIN { FS = ","; stuck_before = "2024-03-02 05:45:00" } # RECON_NOW - stuck_after
{
	if ($2 == "") {
		if ($8 == "PAID" || $8 == "REFUNDED") extra++; else matched++
		next
	}
	if ($8 == "") {
		if ($5 == "SUCCESS" || $5 == "REFUND") missing++; else matched++
		next
	}
	up = $3; sub(/\./, "", up)
	if (up + 0 != $7 + 0) amount++
	else if ($8 == "PENDING" && $9 < stuck_before) stuck++
	else if (($5 == "SUCCESS" && $8 != "PAID") || ($5 == "REFUND" && $8 != "REFUNDED")) status++
	else matched++
}
END {
	printf "missing %d\nextra %d\nstuck %d\namount_mismatch %d\nstatus_mismatch %d\nduplicate 0\nmatched %d\n",
	    missing, extra, stuck, amount, status, matched
}
