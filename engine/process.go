package engine

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-go/baton"
)

// Field limits of a holder record: a host name is at most 253 bytes in
// DNS; a program name is cut to what an operator reads at a glance.
const (
	maxHost    = 128
	maxProgram = 64
)

// ProcessData encodes p as the holder record an engine stores with a
// grant: a URL query ("host=web-1&pid=4242&prog=worker&l.team=pay"),
// printable, at most baton.MaxProcessLen bytes. Labels that do not fit
// are left out; a long host or program name is cut. Compute it once per
// client, not per grant: it is the same for every grant.
func ProcessData(p baton.Process) string {
	var b strings.Builder
	add := func(k, v string) bool {
		kv := url.QueryEscape(k) + "=" + url.QueryEscape(v)
		if b.Len()+1+len(kv) > baton.MaxProcessLen {
			return false
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(kv)
		return true
	}
	add("host", cut(p.Host, maxHost))
	add("pid", strconv.Itoa(p.PID))
	if p.Program != "" {
		add("prog", cut(p.Program, maxProgram))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
		add("l."+k, p.Labels[k])
	}
	return b.String()
}

// ParseProcess decodes a holder record written by ProcessData. Anything
// else (an older baton's entry, another program's data) gives the zero
// Process: a record is information, never a reason to fail.
func ParseProcess(data string) baton.Process {
	if !strings.HasPrefix(data, "host=") {
		return baton.Process{}
	}
	q, err := url.ParseQuery(data)
	if err != nil {
		return baton.Process{}
	}
	p := baton.Process{Host: q.Get("host"), Program: q.Get("prog")}
	p.PID, _ = strconv.Atoi(q.Get("pid"))
	for k, v := range q {
		if l, ok := strings.CutPrefix(k, "l."); ok && len(v) > 0 {
			if p.Labels == nil {
				p.Labels = map[string]string{}
			}
			p.Labels[l] = v[0]
		}
	}
	return p
}

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }
