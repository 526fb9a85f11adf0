#!/bin/sh
# critical.sh DIR WHO HOLD [KIND] — the critical section that `baton run`,
# `baton elect`, `etcdctl lock` and `etcdctl elect` (etcdctl-elect.sh) run
# while they hold their grant; java/CuratorRecipes.java does the same steps
# in Java.
#
# KIND is what the holder believes it holds: mutex (the default), write,
# read, permit or leader. The holder creates its marker DIR/holders/KIND.WHO,
# lists every marker present (SEEN) and logs
# "enter WHO TOKEN ENGINE LOCK KIND EPOCH SEEN" (baton's child environment,
# "-" where unset); holds; logs "exit WHO" and removes its marker. Marker
# then listing, on both sides of any pair of holders, means that of two
# holders inside at once at least one sees the other; the test also replays
# the log. A marker that already exists means WHO was granted twice at once:
# that is logged as "overlap WHO". Every line is one append (O_APPEND), so
# lines of concurrent writers never mix.
#
# HOLD is seconds ("0.05") or "gate": hold until DIR/release-WHO exists,
# bounded at 60 s so a broken test cannot leave a holder behind.
set -u
dir=$1 who=$2 hold=$3 kind=${4:-mutex}
mkdir -p "$dir/holders"
mine="$dir/holders/$kind.$who"
if ! mkdir "$mine" 2>/dev/null; then
	echo "overlap $who" >>"$dir/log"
	exit 0
fi
seen=$(ls "$dir/holders" | tr '\n' ,)
echo "enter $who ${BATON_TOKEN:--} ${BATON_ENGINE:--} ${BATON_LOCK:--} $kind ${BATON_EPOCH:--} ${seen%,}" >>"$dir/log"
if [ "$hold" = gate ]; then
	i=0
	while [ ! -e "$dir/release-$who" ]; do
		i=$((i + 1))
		if [ "$i" -gt 3000 ]; then
			echo "gate-timeout $who" >>"$dir/log"
			break
		fi
		sleep 0.02
	done
else
	sleep "$hold"
fi
echo "exit $who" >>"$dir/log"
rmdir "$mine"
