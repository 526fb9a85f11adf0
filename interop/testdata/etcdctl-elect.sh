#!/bin/sh
# etcdctl-elect.sh ETCDCTL ENDPOINT NAME DIR WHO HOLD — campaign with
# `etcdctl elect NAME WHO` and run critical.sh (kind leader) while leader.
#
# etcdctl elect runs no command: it prints the leader key once it is
# elected and keeps leadership until SIGINT, on which it resigns and exits.
# So this wrapper reads its first output line (printed only after Campaign
# returned), runs the critical section, and only after the section has
# logged its exit sends SIGINT and waits: the section lies inside the
# leadership. Its exit status is etcdctl's, or 70 if etcdctl printed
# nothing.
set -u
etcdctl=$1 endpoint=$2 name=$3 dir=$4 who=$5 hold=$6
here=$(dirname "$0")
fifo="$dir/elect-$who.fifo"
rm -f "$fifo"
mkfifo "$fifo"
"$etcdctl" --endpoints="$endpoint" elect "$name" "$who" >"$fifo" &
pid=$!
exec 3<"$fifo"
rm -f "$fifo"
if ! read -r key <&3; then
	wait "$pid"
	status=$?
	echo "etcdctl elect printed nothing (exit $status)" >&2
	[ "$status" -ne 0 ] || status=70
	exit "$status"
fi
sh "$here/critical.sh" "$dir" "$who" "$hold" leader
kill -INT "$pid"
wait "$pid"
