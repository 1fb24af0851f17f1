# Completes each line of stdin (LINE followed by "|") in a real interactive
# zsh (compinit, the autoloaded _kbuild from the directory $1, as a Tab
# press runs it) and prints "LINE<tab>the words offered". Its compadd is
# wrapped to show the matches it was given that fit the word at the cursor.
# Usage: zsh -f completion_zsh.zsh DIR_WITH__kbuild < lines
zmodload zsh/zpty || exit 1
local line out got
zpty z zsh -f -i
zpty -w z "PROMPT='>'; LISTMAX=100000; unsetopt autolist automenu beep"
zpty -w z "fpath=(${(q)1} \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z 'compadd() { local -a m; builtin compadd -O m "$@"; print -r -- "<<$m>>" > /dev/tty; }'
# Tab completes, then says it is done, and nothing is typed ahead of it
# (with keys pending after the Tab, zsh at times completed nothing).
zpty -w z 'complete-and-say() { zle complete-word; print -r -- "@@EN""D@@" > /dev/tty; }'
zpty -w z 'zle -N complete-and-say; bindkey "^I" complete-and-say; echo RE""ADY'
zpty -r z out '*READY*'
while IFS= read -r line; do
  line=${line%|}
  zpty -w -n z "$line"$'\t'
  zpty -r z out '*@@END@@*'
  zpty -w -n z $'\x15'  # Ctrl-U: the line is killed
  got=
  while [[ $out == *'<<'*'>>'* ]]; do
    out=${out#*<<}; got+=" ${out%%>>*}"; out=${out#*>>}
  done
  printf '%s\t%s\n' "$line" "${got# }"
done
zpty -d z
