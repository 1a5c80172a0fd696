#!/usr/bin/env zsh
# SPDX-License-Identifier: GPL-2.0-or-later
# Print the completions zsh offers for a command line, one per line:
#     zsh-complete.zsh FPATH_DIR 'llmtune audit --profile '
# Runs an interactive zsh in a pseudo-terminal (zsh/zpty), loads the completion system with
# FPATH_DIR first in $fpath, types the line and a TAB, and prints every match compadd is given.
# After Valodim's zsh-capture-completion (MIT). Exit 77 when zsh/zpty is missing.
zmodload zsh/zpty 2>/dev/null || { print -u2 'zsh/zpty missing'; exit 77 }
fdir=$1 cmdline=$2

capture() {
  zpty z zsh -f -i
  local line
  zpty -w z "fpath=(${(q)fdir} \$fpath); autoload -U compinit; compinit -u -D"
  zpty -w z "null-line() { echo -E - \$'\\0' }; compprefuncs=( null-line ); comppostfuncs=( null-line exit )"
  zpty -w z "zstyle ':completion:*' list-grouped false; zstyle ':completion:*' insert-tab false"
  zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi
    typeset -a __hits; builtin compadd -A __hits "$@"; local h; for h in $__hits; do echo -E - "MATCH:$h"; done }'
  # last: from here on Return runs nothing (the typed line must never be executed)
  zpty -w z "bindkey '^M' undefined-key; bindkey '^J' undefined-key; bindkey '^I' complete-word"
  zpty -w z "$cmdline"$'\t'
  integer tog=0
  while zpty -r z; do :; done | while IFS= read -r line; do
    if [[ $line == *$'\0\r' ]]; then
      (( tog++ )) && return 0 || continue
    fi
    (( tog )) && [[ $line == MATCH:* ]] && print -r -- ${${line#MATCH:}%$'\r'}
  done
  return 2
}
capture
rc=$?
zpty -d z 2>/dev/null
exit $rc
