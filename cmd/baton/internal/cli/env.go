package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
)

// Env is what a command reads and writes of its process: the standard
// streams, the environment, and where its notes and failures go. main
// makes one (OSEnv) and hands it to the subcommand; tests make their own.
// Its methods are safe for concurrent use.
type Env struct {
	Stdin  *os.File // COMMAND's stdin, and the terminal baton may hand it
	Stdout io.Writer
	Stderr io.Writer
	// Getenv and LookupEnv read the environment; LookupEnv tells an
	// empty variable from an unset one.
	Getenv    func(string) string
	LookupEnv func(string) (string, bool)
	// Environ is the environment COMMAND inherits.
	Environ func() []string

	mu sync.Mutex
	// topic is the subcommand being run, whose help a usage error points
	// at; "" before one is known.
	topic string
	// json, when set, receives notes and failures as records: with
	// --log-format json every line baton writes on stderr must decode as
	// JSON, so the short human notes cannot stay plain text.
	json *slog.Logger
	// said holds the keys of the notes NoteOnce printed.
	said map[string]bool
}

// OSEnv is the environment of this process.
func OSEnv() *Env {
	return &Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, LookupEnv: os.LookupEnv, Environ: os.Environ}
}

// SetTopic records the subcommand being run, for Fail's pointer to its
// help.
func (e *Env) SetTopic(cmd string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.topic = cmd
}

// SetJSON makes notes and failures records of lg (--log-format json).
func (e *Env) SetJSON(lg *slog.Logger) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.json = lg
}

// jsonNotes returns the logger of SetJSON, nil without one.
func (e *Env) jsonNotes() *slog.Logger {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.json
}

// StderrIsTerminal reports whether stderr is a terminal, a person's.
func (e *Env) StderrIsTerminal() bool {
	f, ok := e.Stderr.(*os.File)
	return ok && IsTerminal(f)
}

// Note prints one short state line on stderr (a warning record with
// --log-format json).
func (e *Env) Note(format string, args ...any) {
	msg := Tidy(fmt.Sprintf(format, args...))
	if lg := e.jsonNotes(); lg != nil {
		lg.Warn(msg)
		return
	}
	fmt.Fprintf(e.Stderr, "baton: %s\n", msg)
}

// NoteOnce is Note, but only the first time in this Env for key: a
// warning about the command line is worth one line, however many
// clients a command opens.
func (e *Env) NoteOnce(key, format string, args ...any) {
	e.mu.Lock()
	said := e.said[key]
	if !said {
		if e.said == nil {
			e.said = map[string]bool{}
		}
		e.said[key] = true
	}
	e.mu.Unlock()
	if !said {
		e.Note(format, args...)
	}
}

// Fail prints err and returns its exit code. Usage errors point at the
// help of the subcommand that was run (SetTopic).
func (e *Env) Fail(err error) int {
	code := Classify(context.Background(), err, false)
	msg := Tidy(err.Error())
	e.mu.Lock()
	help := "baton help"
	if e.topic != "" {
		help += " " + e.topic
	}
	e.mu.Unlock()
	if lg := e.jsonNotes(); lg != nil {
		if code == ExitUsage {
			lg.Error(msg, "exit", code, "help", help)
		} else {
			lg.Error(msg, "exit", code)
		}
		return code
	}
	fmt.Fprintf(e.Stderr, "baton: %s\n", msg)
	if code == ExitUsage {
		fmt.Fprintf(e.Stderr, "Run '%s' for usage.\n", help)
	}
	return code
}

// FailConnected reports a failure of a command that reached for the
// backend (inspect, clean, the exporter, drill) and returns its code.
func (e *Env) FailConnected(sigCtx context.Context, err error) int {
	code := Classify(sigCtx, err, false)
	switch {
	case code == ExitUsage:
		return e.Fail(err)
	case code == ExitUnavailable:
		e.Note("backend unreachable: %v", err)
	case code == ExitNoPerm:
		e.Note("backend refused authentication or TLS: %v", err)
	case code > ExitSignalBase:
		e.Note("interrupted by %v", syscall.Signal(code-ExitSignalBase))
	default:
		e.Note("%v", err)
	}
	return code
}

// ShowHelp prints help that was asked for (baton help X, baton X --help)
// on stdout, so that it can be paged or searched (baton help run | less),
// and returns ExitOK. Help printed because of a usage error goes to
// stderr with ExitUsage instead.
func (e *Env) ShowHelp(usage string) int {
	fmt.Fprint(e.Stdout, usage)
	return ExitOK
}
