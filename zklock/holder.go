package zklock

import (
	"bytes"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/engine"
	"github.com/baton-go/baton/engine/queuekit"
)

// The holder record rides in the data of the create that makes an entry
// (no extra request), so that Inspect shows who holds and who waits. Its
// place depends on who else reads the data:
//
//   - mutex, read and write entries and the semaphore's guard: the record
//     is the whole data. Curator writes the client's IP address there,
//     and no recipe of either library reads it.
//   - semaphore leases: "baton:permits=<N>\n<record>". The N stays first,
//     as baton has always written it; the record follows on a line of its
//     own. Curator's InterProcessSemaphoreV2 reads no lease data, and Data
//     hands the recipes the part before the newline, so queuekit.ParsePermits
//     reads the N as before. (A baton built before the record reads such a
//     lease as another program's and does not judge its N.)
//   - election candidates: the candidate ID alone, no record. Curator's
//     LeaderLatch reads the whole data as the participant ID, which
//     services use to find the leader: a suffix would break that.
const holderSep = '\n'

// holderPrefix starts every record engine.ProcessData writes.
var holderPrefix = []byte("host=")

// holderRecord encodes p (this process when p is zero) once per client.
func holderRecord(p baton.Process) []byte {
	return []byte(engine.ProcessData(engine.OrThisProcess(p)))
}

// entryData is the data an entry of kind is created with, given the
// recipe's own data (nil: none). Only a lease's pays an allocation: a
// mutex's create reuses the client's record.
func (c *Client) entryData(kind queuekit.Kind, own []byte) []byte {
	switch {
	case own == nil:
		return c.proc
	case kind == queuekit.KindLease:
		b := make([]byte, 0, len(own)+1+len(c.proc))
		b = append(b, own...)
		b = append(b, holderSep)
		return append(b, c.proc...)
	}
	return own
}

// splitHolder splits an entry's data into the recipe's own part and the
// holder record, which is the last line when it starts as ProcessData's
// records do (a record is query-escaped: it holds no newline). Data
// without a record (Curator's, an older baton's) is all own data.
func splitHolder(data []byte) (own []byte, p baton.Process) {
	i := bytes.LastIndexByte(data, holderSep)
	rec := data[i+1:]
	if !bytes.HasPrefix(rec, holderPrefix) {
		return data, baton.Process{}
	}
	if i >= 0 {
		own = data[:i]
	}
	return own, engine.ParseProcess(string(rec))
}
