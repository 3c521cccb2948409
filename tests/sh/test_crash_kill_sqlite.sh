#!/bin/sh
# Crash safety on SQLite: see crash_kill.sh.
ENGINE=sqlite
. "$(dirname "$0")/crash_kill.sh"
