#!/bin/sh
# The demo agent (70 XT-3.3): `work` prints a heartbeat every second forever; `crash-once CODE SECS` exits with
# CODE after SECS seconds the first time (a marker under the demo root remembers it) and works afterwards.
root='@ROOT@'
mode=${1:-work}
if [ "$mode" = crash-once ]; then
  marker="$root/crashed-once-$(tmux display-message -p '#S' 2>/dev/null)"
  if [ ! -e "$marker" ]; then
    : > "$marker"
    echo "demo-agent: working for $3 s, then exiting with status $2"
    sleep "$3"
    exit "$2"
  fi
fi
[ $# -gt 1 ] && [ "$mode" = work ] && echo "demo-agent: kickoff prompt: $2"
n=0
while :; do
  n=$((n+1))
  echo "demo-agent: heartbeat $n"
  sleep 1
done
