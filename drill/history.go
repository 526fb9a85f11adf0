package drill

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Phase is where an event stands in an operation's life.
type Phase string

const (
	// Invoke: the client is about to send the request.
	Invoke Phase = "invoke"
	// Ok: the operation took effect and the client knows it.
	Ok Phase = "ok"
	// Fail: the operation definitely did not take effect.
	Fail Phase = "fail"
	// Unknown: the client cannot know whether it took effect (a lost
	// response, a timeout after sending). Never folded into Fail.
	Unknown Phase = "unknown"
	// Info: a point event that is not a request: an observed lease state,
	// a fault, a seed.
	Info Phase = "info"
)

// Operations the checkers understand. Other ops may appear in a history
// and are ignored by the checkers that do not know them.
const (
	OpAcquire = "acquire" // Lock; ok carries Token and Entry
	OpRelease = "release" // Release of the grant with Token
	OpRead    = "read"    // resource read (fenced reads advance the fence); ok carries Value
	OpWrite   = "write"   // resource write of Value with Token
	OpState   = "state"   // Info: a lease state observed by its holder (Detail: suspended, lost, …)
	OpWatch   = "watch"   // Info: a waiter registered a watch on the entry in Entry
	OpFault   = "fault"   // a fault: invoke when injected, ok when healed; Detail names it
	OpSeed    = "seed"    // Info: the seed of a trial, in Value
)

// Event is one line of a history. T is CLOCK_MONOTONIC in nanoseconds, the
// same clock in every process of the host, so a child process's events
// merge into its parent's history in true order.
type Event struct {
	Client string `json:"client"`
	Op     string `json:"op"`
	Phase  Phase  `json:"phase"`
	Token  uint64 `json:"token,omitempty"`
	Name   string `json:"name,omitempty"`
	T      int64  `json:"t_monotonic"`
	// ID pairs an invoke with its completion; unique per Client.
	ID int64 `json:"id,omitempty"`
	// Value is a resource value: read on a read's ok, to be written on a
	// write's invoke; the seed on a seed event.
	Value *int64 `json:"value,omitempty"`
	// Entry is the queue entry (or lease owner) of a grant, the resource
	// owner of a read or write, the watched entry of a watch.
	Entry string `json:"entry,omitempty"`
	// Order is the engine's queue order of Entry (ZooKeeper sequence,
	// etcd create revision), for the FIFO check.
	Order uint64 `json:"order,omitempty"`
	// Detail names a fault or a state, or holds an error's text.
	Detail string `json:"detail,omitempty"`
}

// Int returns a pointer to v, for Event.Value.
func Int(v int64) *int64 { return &v }

// Now returns CLOCK_MONOTONIC in nanoseconds: Go's monotonic clock is not
// comparable across processes, this one is (on one host).
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("drill: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// Recorder appends events to a history. It is safe for concurrent use. It
// keeps every event in memory for the checkers and writes each as one JSON
// line to w as it happens, so a crashed drill still leaves its history.
type Recorder struct {
	mu     sync.Mutex
	w      *bufio.Writer
	f      io.Writer
	events []Event
	nextID int64
	err    error
}

// NewRecorder returns a recorder writing JSON lines to w (nil: memory only).
func NewRecorder(w io.Writer) *Recorder {
	r := &Recorder{f: w}
	if w != nil {
		r.w = bufio.NewWriter(w)
	}
	return r
}

// Record stamps e (when e.T is 0) and appends it. It returns the stamped
// event.
func (r *Recorder) Record(e Event) Event {
	if e.T == 0 {
		e.T = Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.appendLocked(e)
	return e
}

func (r *Recorder) appendLocked(e Event) {
	r.events = append(r.events, e)
	if r.w == nil || r.err != nil {
		return
	}
	b, err := json.Marshal(e)
	if err == nil {
		b = append(b, '\n')
		_, err = r.w.Write(b)
	}
	if err == nil {
		// Flush per line: a child process may be SIGKILLed at any time, and
		// its parent reads the lines as they come.
		err = r.w.Flush()
	}
	if err != nil {
		r.err = fmt.Errorf("drill: write history: %w", err)
	}
}

// Err returns the first error writing the history, if any.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Events returns a copy of the history so far, in recording order.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Op is an invoked operation waiting for its completion.
type Op struct {
	r   *Recorder
	inv Event
}

// Begin records the invoke of op by client on name and returns the handle
// that records its completion.
func (r *Recorder) Begin(client, op, name string, token uint64) *Op {
	return r.BeginEvent(Event{Client: client, Op: op, Name: name, Token: token})
}

// BeginValue is Begin for a resource read or write: owner is the grant's
// owner as the resource sees it, value the value to write (nil for reads).
func (r *Recorder) BeginValue(client, op, name string, token uint64, owner string, value *int64) *Op {
	return r.BeginEvent(Event{Client: client, Op: op, Name: name, Token: token, Entry: owner, Value: value})
}

// BeginEvent records e as an invoke (Phase and ID are set here).
func (r *Recorder) BeginEvent(e Event) *Op {
	r.mu.Lock()
	r.nextID++
	e.ID = r.nextID
	r.mu.Unlock()
	e.Phase = Invoke
	return &Op{r: r, inv: r.Record(e)}
}

// End records the completion with phase, copying the invoke's identity;
// edit, if given, fills in the rest (Value, Token, Entry, Detail).
func (o *Op) End(phase Phase, edit func(*Event)) Event {
	e := Event{Client: o.inv.Client, Op: o.inv.Op, Phase: phase, Name: o.inv.Name, Token: o.inv.Token, ID: o.inv.ID, Entry: o.inv.Entry}
	if edit != nil {
		edit(&e)
	}
	return o.r.Record(e)
}

// Ok records a success.
func (o *Op) Ok() Event { return o.End(Ok, nil) }

// Fail records a definite failure, keeping err's text.
func (o *Op) Fail(err error) Event {
	return o.End(Fail, func(e *Event) { e.Detail = errText(err) })
}

// Unknown records an unknown outcome, keeping err's text.
func (o *Op) Unknown(err error) Event {
	return o.End(Unknown, func(e *Event) { e.Detail = errText(err) })
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Info records a point event.
func (r *Recorder) Info(client, op, name, detail string) Event {
	return r.Record(Event{Client: client, Op: op, Phase: Info, Name: name, Detail: detail})
}

// Fault records the injection of a fault named kind (on client's link or
// process, "" for the whole system) and returns the function that records
// its healing; calling it again does nothing.
func (r *Recorder) Fault(client, kind string) (heal func()) {
	o := r.BeginEvent(Event{Client: client, Op: OpFault, Detail: kind})
	var once sync.Once
	return func() { once.Do(func() { o.End(Ok, func(e *Event) { e.Detail = kind }) }) }
}

// Ingest appends events recorded elsewhere (a child process's history),
// keeping their timestamps.
func (r *Recorder) Ingest(es ...Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range es {
		r.appendLocked(e)
	}
}

// ReadHistory parses a JSON-lines history.
func ReadHistory(rd io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return out, fmt.Errorf("drill: history line %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// ReadHistoryFile parses the JSON-lines history in path.
func ReadHistoryFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadHistory(f)
}

// errNoEvents is returned by checkers given nothing to check: a check that
// sees no operations proves nothing.
var errNoEvents = errors.New("drill: history has no operations to check")
