package zklock

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
	"github.com/go-zookeeper/zk"
)

var (
	_ queuekit.Inspector    = (*Client)(nil)
	_ queuekit.Remover      = (*Client)(nil)
	_ queuekit.TokenBounder = (*Client)(nil)
)

// subQueues are the children of a lock directory that are queues of their
// own: Curator's InterProcessSemaphoreV2 keeps its guard mutex under
// "locks" and its permits under "leases".
var subQueues = []string{"locks", "leases"}

// fourLetterTimeout bounds each four-letter-word exchange of Inspect.
const fourLetterTimeout = 2 * time.Second

// Inspect lists the queue of name for an operator: the lock directory's
// entries (and those of "locks/" and "leases/" for a semaphore), with one
// read per entry for its creation time, ephemeral owner and data. It is
// the raw listing behind the *baton.Client's Inspect, reached through
// baton.As (as a queuekit.Inspector) for `baton clean`.
//
// Tokens are unknown (0): a holder's token is the directory's pzxid at its
// granting read, which no later read recovers; TokenBound bounds them.
// Session liveness comes from the "dump" four-letter word of the leader (or
// standalone server) among the client's servers, which lists the live
// sessions; when no server answers it (4lw not whitelisted), an ephemeral
// entry's session is reported as unknown, never as dead. A node without an
// ephemeral owner is always flagged: no session will ever remove it.
//
// Each entry's Process is the holder record its creator stored in its data
// (see holderSep): zero for an election candidate, a Curator entry or an
// entry of a baton built before the record.
func (c *Client) Inspect(ctx context.Context, name string) ([]queuekit.EntryInfo, error) {
	out, _, err := c.inspect(ctx, name)
	return out, err
}

// inspect is Inspect, also returning a semaphore's N as its first lease
// with a stored N has it (0 when none has).
func (c *Client) inspect(ctx context.Context, name string) ([]queuekit.EntryInfo, int, error) {
	dir, err := c.dirPath(name)
	if err != nil {
		return nil, 0, err
	}
	s, err := c.session(ctx)
	if err != nil {
		return nil, 0, err
	}
	kids, err := s.children(ctx, dir)
	if err != nil {
		return nil, 0, err
	}
	out, permits, err := s.inspectQueue(ctx, dir, "", kids)
	if err != nil {
		return nil, 0, err
	}
	for _, sub := range subQueues {
		if !slices.Contains(kids, sub) {
			continue
		}
		sk, err := s.children(ctx, dir+"/"+sub)
		if err != nil {
			return nil, 0, err
		}
		q, n, err := s.inspectQueue(ctx, dir+"/"+sub, sub+"/", sk)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, q...)
		permits = max(permits, n)
	}
	if len(out) == 0 {
		return out, permits, nil
	}

	live, why := c.liveSessions(ctx)
	c.recheckMissing(ctx, out, live)
	for i := range out {
		e := &out[i]
		switch {
		case e.Session == "":
			e.DeadSession = true
			e.AddNote("persistent node: no session owns it, so nothing but an operator removes it (a client bug)")
		case live == nil:
			e.AddNote("session liveness unknown (" + why + ")")
		case !live[e.Session]:
			e.DeadSession = true
			e.AddNote("session " + e.Session + " is not live on the server")
		}
	}
	return out, permits, nil
}

// children lists dir; a missing directory has no children.
func (s *session) children(ctx context.Context, dir string) ([]string, error) {
	kids, err := callIdem(ctx, s, func() ([]string, error) {
		k, _, err := s.conn.Children(dir)
		return k, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, s.opErr(ctx, "list "+dir, err)
	}
	return kids, nil
}

// inspectQueue reads the entries among kids of dir, in queue order, with
// rel prefixed to their names, and the N the first of its leases with a
// stored N was taken with (0: none).
func (s *session) inspectQueue(ctx context.Context, dir, rel string, kids []string) ([]queuekit.EntryInfo, int, error) {
	type node struct {
		e    queuekit.Entry
		name string
	}
	var nodes []node
	for _, k := range kids {
		if e, ok := parseEntry(dir, k); ok {
			nodes = append(nodes, node{e, k})
		}
	}
	slices.SortFunc(nodes, func(a, b node) int { return cmp.Compare(a.e.Seq, b.e.Seq) })

	now := time.Now()
	out := make([]queuekit.EntryInfo, 0, len(nodes))
	permits := 0
	for _, n := range nodes {
		type got struct {
			data []byte
			st   *zk.Stat
		}
		g, err := callIdem(ctx, s, func() (got, error) {
			d, st, err := s.conn.Get(n.e.Key)
			return got{d, st}, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone since the listing
		}
		if err != nil {
			return nil, 0, s.opErr(ctx, "read "+n.e.Key, err)
		}
		info := queuekit.EntryInfo{Entry: rel + n.name, Kind: n.e.Kind}
		own := g.data
		if n.e.Kind != queuekit.KindLatch { // a candidate's data is its ID alone
			own, info.Process = splitHolder(g.data)
		}
		if g.st.EphemeralOwner != 0 {
			info.Session = fmt.Sprintf("0x%x", g.st.EphemeralOwner)
		}
		if g.st.Ctime > 0 {
			// The server's clock against ours: never report a negative or
			// zero (unknown) age for an entry that exists.
			info.Age = max(now.Sub(time.UnixMilli(g.st.Ctime)), time.Millisecond)
		}
		switch n.e.Kind {
		case queuekit.KindLease:
			// baton stores its N with each lease; Curator stores no N (by
			// default the client's address).
			if np, ok := queuekit.ParsePermits(own); ok {
				if permits == 0 {
					permits = np
				} else if np != permits {
					info.AddNote(fmt.Sprintf("taken with N=%d, the first lease with N=%d", np, permits))
				}
			}
		case queuekit.KindLatch:
			if len(g.data) > 0 && len(g.data) <= 200 {
				info.AddNote("candidate id " + strconv.Quote(string(g.data)))
			}
		}
		out = append(out, info)
	}
	queuekit.MarkHolders(out, permits)
	markDuplicates(out)
	return out, permits, nil
}

// protectedID returns the "_c_<uuid>-" prefix of a protected entry name.
func protectedID(name string) (string, bool) {
	const n = len(protectedPrefix) + 36 + 1
	if !strings.HasPrefix(name, protectedPrefix) || len(name) < n || name[n-1] != '-' {
		return "", false
	}
	return name[:n], true
}

// markDuplicates flags every entry that shares its protected prefix and its
// session with a smaller entry of the same queue (q is sorted): the
// leftovers of a create retried after a lost response (drill row 1 in
// docs/faults.md). The smallest is the attempt's real entry, the one a correct client adopts.
func markDuplicates(q []queuekit.EntryInfo) {
	first := map[string]int{}
	for i := range q {
		name := q[i].Entry[strings.LastIndexByte(q[i].Entry, '/')+1:]
		id, ok := protectedID(name)
		if !ok {
			continue
		}
		j, seen := first[id]
		if !seen {
			first[id] = i
			continue
		}
		e, orig := &q[i], q[j]
		if e.Session != "" && e.Session == orig.Session {
			e.Duplicate = true
			e.AddNote("duplicate of " + orig.Entry + " (same prefix, same session)")
		} else {
			// Never judged across sessions (a client that re-created on a
			// new session is buggy, but which entry it uses is unknown).
			e.AddNote("shares its prefix with " + orig.Entry + " but not its session: not provably a duplicate")
		}
	}
}

// Remove deletes exactly the entry named as Inspect names it. It refuses
// anything that is not an entry of a recipe directly in the lock directory
// or in its "locks/" or "leases/" queue, so it can never remove the
// directory or reach outside it. It is reached through baton.As (as a
// queuekit.Remover).
func (c *Client) Remove(ctx context.Context, name, entry string) error {
	dir, err := c.dirPath(name)
	if err != nil {
		return err
	}
	parent, child := dir, entry
	if sub, rest, ok := strings.Cut(entry, "/"); ok {
		if !slices.Contains(subQueues, sub) {
			return fmt.Errorf("zklock: remove %q from %q: not an entry of the lock: %w", entry, name, baton.ErrInvalidOption)
		}
		parent, child = dir+"/"+sub, rest
	}
	if _, ok := parseEntry(parent, child); !ok || strings.Contains(child, "/") {
		return fmt.Errorf("zklock: remove %q from %q: not an entry of the lock: %w", entry, name, baton.ErrInvalidOption)
	}
	s, err := c.session(ctx)
	if err != nil {
		return err
	}
	path := parent + "/" + child
	_, err = callIdem(ctx, s, func() (struct{}, error) { return struct{}{}, s.conn.Delete(path, -1) })
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return s.opErr(ctx, "delete "+path, err)
}

// TokenBound returns the largest pzxid (plus the token floor) of the lock
// directory and its semaphore queues. Every token granted so far is a
// pzxid read at or before this moment, so none exceeds it; the next
// exclusive grant after any change of the queue (such as a forced removal)
// reads a larger pzxid. It is reached through baton.As (as a
// queuekit.TokenBounder).
func (c *Client) TokenBound(ctx context.Context, name string) (uint64, error) {
	dir, err := c.dirPath(name)
	if err != nil {
		return 0, err
	}
	s, err := c.session(ctx)
	if err != nil {
		return 0, err
	}
	var bound int64
	for _, p := range []string{dir, dir + "/locks", dir + "/leases"} {
		st, err := callIdem(ctx, s, func() (*zk.Stat, error) {
			ok, st, err := s.conn.Exists(p)
			if err == nil && !ok {
				st = nil
			}
			return st, err
		})
		if err != nil {
			return 0, s.opErr(ctx, "stat "+p, err)
		}
		if st != nil {
			bound = max(bound, st.Pzxid)
		}
	}
	return engine.FloorToken(uint64(bound), c.opts.TokenFloor)
}

// liveSessions asks the leader (or the standalone server) among the
// client's servers for its session tracker's "Session Sets" through the
// "dump" four-letter word. Followers only know their own connections, so
// they are not asked. It returns nil and the reason when no answer can be
// trusted.
func (c *Client) liveSessions(ctx context.Context) (map[string]bool, string) {
	why := "no server answered the srvr/dump four-letter words"
	for _, addr := range c.servers {
		srvr, err := fourLetter(ctx, addr, "srvr")
		if err != nil {
			why = err.Error()
			continue
		}
		mode := ""
		for _, line := range strings.Split(srvr, "\n") {
			if m, ok := strings.CutPrefix(line, "Mode: "); ok {
				mode = strings.TrimSpace(m)
			}
		}
		if mode != "leader" && mode != "standalone" {
			if mode == "" {
				why = addr + " does not answer srvr (4lw.commands.whitelist)"
			}
			continue
		}
		dump, err := fourLetter(ctx, addr, "dump")
		if err != nil {
			why = err.Error()
			continue
		}
		if live, ok := parseSessionSets(dump); ok {
			return live, ""
		}
		why = addr + " does not answer dump (4lw.commands.whitelist)"
	}
	return nil, why
}

// deadRechecks is how many more dumps recheckMissing reads.
const deadRechecks = 2

// recheckMissing asks again, up to deadRechecks times, while a session
// of out is missing from live, and adds what the later dumps list. One
// dump can miss a live session: the server lists its expiry buckets'
// times first and reads each bucket after, and a session touched in
// between moves to a bucket that is not in the list, out of one not yet
// read. A live holder was reported dead that way in a test run; a dead
// session stays missing from every dump.
func (c *Client) recheckMissing(ctx context.Context, out []queuekit.EntryInfo, live map[string]bool) {
	missing := func() bool {
		for _, e := range out {
			if e.Session != "" && !live[e.Session] {
				return true
			}
		}
		return false
	}
	for range deadRechecks {
		if live == nil || !missing() {
			return
		}
		again, _ := c.liveSessions(ctx)
		for s := range again {
			live[s] = true
		}
	}
}

// parseSessionSets reads the session IDs of a dump's "Session Sets"
// section, the live sessions grouped by expiry bucket.
func parseSessionSets(dump string) (map[string]bool, bool) {
	sc := bufio.NewScanner(strings.NewReader(dump))
	in, found := false, false
	live := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Session Sets ("):
			in, found = true, true
		case in && strings.HasPrefix(line, "\t0x"):
			id, err := strconv.ParseUint(strings.TrimSpace(line)[2:], 16, 64)
			if err == nil {
				live[fmt.Sprintf("0x%x", id)] = true
			}
		case in && !strings.HasPrefix(line, "\t") && !strings.Contains(line, " expire at "):
			in = false
		}
	}
	return live, found
}

// fourLetter sends a four-letter word to addr and returns the reply.
func fourLetter(ctx context.Context, addr, word string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, fourLetterTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", word, addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("%s %s: %w", word, addr, err)
	}
	b, err := io.ReadAll(io.LimitReader(conn, 16<<20))
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", word, addr, err)
	}
	return string(b), nil
}
