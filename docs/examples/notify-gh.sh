#!/bin/sh
# An example AGENT_BOX_ON_OUTCOME notifier (docs/notification.md): comments on the GitHub issue or pull request a
# dispatched session was working on when its assignment ended without finishing (vanished, died:N, stopped).
#
# Needs gh and jq on PATH; gh authenticates with GH_TOKEN, which the supervisor passes from the env store
# (agent-box-session env set GH_TOKEN). Exit 0 tells the supervisor the outcome was delivered; any other status
# makes it try again later (10 s, doubling up to 10 minutes). An outcome with nothing to comment on (no GitHub
# topic, no issue number) exits 0: there is nobody to tell, and retrying would not change that.
#
# Every field is read from the JSON document on standard input with jq and only ever used as one argument:
# nothing from it is evaluated by the shell.
set -eu

doc=$(cat)
field() { printf '%s\n' "$doc" | jq -r --arg key "$1" '.[$key] // "" | tostring'; }

topic=$(field topic)
object=$(field object)
outcome=$(field outcome)
name=$(field name)
host=$(field host)
ended=$(field endedAt)

case $topic in
  github:*) repo=${topic#github:} ;;
  *) echo "notify-gh: topic is not a GitHub repository; nothing to comment on" >&2; exit 0 ;;
esac
if ! printf '%s\n' "$repo" | grep -Eqx '[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+'; then
  echo "notify-gh: the topic does not name owner/repo; nothing to comment on" >&2
  exit 0
fi
if ! printf '%s\n' "$object" | grep -Eqx '[0-9]+'; then
  echo "notify-gh: no issue or pull request number; nothing to comment on" >&2
  exit 0
fi

case $outcome in
  vanished) what="its session ended without recording how (killed, a reboot or out of memory)" ;;
  died:*) what="its agent exited with status ${outcome#died:}" ;;
  stopped) what="an operator stopped its session" ;;
  *) what="it ended as \"$outcome\"" ;;
esac

body=$(printf 'agent-box on %s: the assignment of session `%s` did not finish: %s (%s). Nobody is working on this any more: please dispatch it again or take it over.' \
  "${host:-this box}" "$name" "$what" "$ended")

# The issues comment endpoint serves pull requests too.
exec gh api --method POST "repos/$repo/issues/$object/comments" -f "body=$body"
