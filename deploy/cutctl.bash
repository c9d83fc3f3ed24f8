# bash completion for cutctl(1), installed as
# /usr/share/bash-completion/completions/cutctl.
#
# Commands, options and which commands take a snapshot ID come from
# `cutctl --help` itself, so that new commands complete without an edit
# here; snapshot ids from `cutctl list` at the daemon the line names
# (quietly: nothing when there is no daemon); node names from the cluster
# file the line names (--cluster, $CUTD_CLUSTER, /etc/cutd/cluster.ini).

# The commands, one per line, from the "commands:" part of --help.
_cutctl_commands() {
	"$1" --help 2>/dev/null | awk '/^commands:/ { f = 1; next }
		/^$/ { f = 0 } f && /^  [a-z]/ { print $1 }'
}

# 0 if command $2 takes a snapshot ID (its usage line in --help says ID).
_cutctl_takes_id() {
	"$1" --help 2>/dev/null | awk -v c="$2" '/^commands:/ { f = 1; next }
		/^$/ { f = 0 } f && $1 == c && / ID( |$)/ { found = 1 }
		END { exit !found }'
}

# The options, from --help.
_cutctl_options() {
	"$1" --help 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u
}

# The nodes of the cluster file the line (words $2...) names.
_cutctl_nodes() {
	local file=${CUTD_CLUSTER:-/etc/cutd/cluster.ini} prev="" w
	shift
	for w in "$@"; do
		[[ $prev == --cluster ]] && file=$w
		[[ $w == --cluster=* ]] && file=${w#--cluster=}
		prev=$w
	done
	[[ -r $file ]] &&
		sed -n 's/^[[:space:]]*\[node[[:space:]]\{1,\}\([^]]*\)\].*/\1/p' "$file"
}

# The snapshot ids at the daemon the line (words $2...) names.
_cutctl_ids() {
	local prog=$1 args=() prev="" w
	shift
	for w in "$@"; do
		case $prev in
		--control | --cluster | --node | --initiator) args+=("$prev" "$w") ;;
		esac
		case $w in
		--control=* | --cluster=* | --node=*) args+=("$w") ;;
		esac
		prev=$w
	done
	"$prog" "${args[@]}" --timeout 1000 list 2>/dev/null |
		awk 'NR > 1 { print $1 }'
}

# bash splits words at colons, and ids and URLs hold some: the words are
# taken again from the line up to the cursor, split at blanks only, and
# only what follows the current word's last colon is given back.
_cutctl() {
	local line=${COMP_LINE:0:COMP_POINT} words=() prog cur prev cmd=""
	local list i skip=0 IFS=$' \t\n'
	COMPREPLY=()
	read -ra words <<<"$line"
	[[ -z $line || $line == *[[:space:]] ]] && words+=("")
	prog=${words[0]}
	cur=${words[${#words[@]} - 1]}
	prev=${words[${#words[@]} - 2]}
	for ((i = 1; i < ${#words[@]} - 1; i++)); do
		if ((skip)); then
			skip=0
			continue
		fi
		case ${words[i]} in
		--control | --cluster | --node | --initiator | --timeout | \
			--limit | --deadline | --every | --condition | \
			--condition-file) skip=1 ;;
		-*) ;;
		*) [[ -z $cmd ]] && cmd=${words[i]} ;;
		esac
	done
	case $prev in
	--cluster | --condition-file)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	--node | --initiator)
		COMPREPLY=($(compgen -W "$(_cutctl_nodes "${words[@]}")" -- "$cur"))
		return
		;;
	--control | --timeout | --limit | --deadline | --every | --condition)
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		list=$(_cutctl_options "$prog")
	elif [[ -z $cmd ]]; then
		list=$(_cutctl_commands "$prog")
	elif [[ $cmd == schedule ]]; then
		list="show pause resume"
	elif _cutctl_takes_id "$prog" "$cmd"; then
		list=$(_cutctl_ids "${words[@]}")
	else
		return
	fi
	COMPREPLY=($(compgen -W "$list" -- "$cur"))
	if [[ $cur == *:* ]]; then
		local colon=${cur%"${cur##*:}"}
		for ((i = 0; i < ${#COMPREPLY[@]}; i++)); do
			COMPREPLY[i]=${COMPREPLY[i]#"$colon"}
		done
	fi
}
complete -F _cutctl cutctl
