# shellcheck shell=bash
# The CFG-script contract (cfg_scripts/README.md), written once for every
# forwarder's script.  A script starts with `set -euo pipefail`, sets
#   PROG       its name for messages (e.g. linux.sh)
#   BEHAVIORS  its behavior functions (array)
#   HELPERS    its other functions besides `clean` (array, may be empty)
# sources this file from its own directory, defines `clean` and its functions,
# and ends with `main "$@"`.  srperf pushes this file beside the script.

# The ERR trap (inherited by functions) records the command that failed, for
# the report of an unexpected failure (see on_exit).
set -o errtrace
trap 'FAILED_CMD=$BASH_COMMAND' ERR

FUNCTION=""
FAILED_CMD=""
REPORTED=0 # 1 once the reason of a failure is on stderr

# die MSG: exit 1 (a command failed) with MSG on stderr.
die() {
	echo "$PROG: $*" >&2
	REPORTED=1
	exit 1
}

# usage_error MSG: exit 2 (unknown function, missing or invalid variable).
usage_error() {
	echo "$PROG: $*" >&2
	REPORTED=1
	exit 2
}

# unsupported REASON: exit 3, the SUT cannot do it (REASON: the SUT's own words).
unsupported() {
	echo "unsupported: $*" >&2
	REPORTED=1
	exit 3
}

# need VAR...: exit 2 naming every VAR that is unset or empty.
need() {
	local var
	local -a missing=()
	for var in "$@"; do
		if [[ -z "${!var:-}" && " ${missing[*]} " != *" $var "* ]]; then
			missing+=("$var")
		fi
	done
	if ((${#missing[@]} > 0)); then
		usage_error "missing environment variable(s): ${missing[*]}"
	fi
}

is_behavior() {
	local fn
	for fn in "${BEHAVIORS[@]}"; do
		[[ "$1" == "$fn" ]] && return 0
	done
	return 1
}

# EXIT trap: an unexpected failure becomes exit 1 naming the command; a
# behavior that failed (1) or is unsupported (3) leaves nothing configured.
on_exit() {
	local rc=$?
	trap - EXIT
	if ((rc != 0 && REPORTED == 0)); then
		echo "$PROG: $FUNCTION: command failed (exit status $rc): ${FAILED_CMD:-unknown}" >&2
		rc=1
	fi
	if ((rc == 1 || rc == 3)) && is_behavior "$FUNCTION"; then
		(clean) >/dev/null 2>&1 || echo "$PROG: clean after the failure failed too" >&2
	fi
	exit "$rc"
}

# main FUNCTION: run one function under the EXIT trap; `functions` lists them.
main() {
	local -a functions=("${BEHAVIORS[@]}" clean "${HELPERS[@]}")
	if (($# != 1)); then
		usage_error "usage: $PROG FUNCTION (one of: ${functions[*]}; or functions)"
	fi
	if [[ "$1" == functions ]]; then
		printf '%s\n' "${functions[@]}"
		return 0
	fi
	local fn
	for fn in "${functions[@]}"; do
		if [[ "$1" == "$fn" ]]; then
			FUNCTION=$fn
			trap on_exit EXIT
			"$fn"
			return 0
		fi
	done
	usage_error "unknown function '$1' (known: ${functions[*]})"
}
