#!/bin/sh
# Crash safety on PostgreSQL (local flow and writer): see crash_kill.sh.
ENGINE=postgres
. "$(dirname "$0")/crash_kill.sh"
