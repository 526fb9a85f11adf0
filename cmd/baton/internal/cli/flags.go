package cli

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DurationValue is a flag.Value for durations that also takes a bare
// number as seconds (`--ttl 2`), as etcdctl and flock do. Given, if not
// nil, records that the flag was given.
type DurationValue struct {
	D     *time.Duration
	Given *bool
}

func (v DurationValue) String() string {
	if v.D == nil {
		return ""
	}
	return v.D.String()
}

// Set parses s into *v.D.
func (v DurationValue) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*v.D = d
	if v.Given != nil {
		*v.Given = true
	}
	return nil
}

// ParseDuration reads a duration (500ms, 15s, 2m) or a bare number of
// seconds.
func ParseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > float64(math.MaxInt64/int64(time.Second)) {
			return 0, fmt.Errorf("duration %q out of range", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want e.g. 500ms, 15s, 2m)", s)
	}
	return d, nil
}

// SplitDash cuts args at the first "--": baton's own arguments before it,
// COMMAND after it, so that COMMAND's flags never reach baton.
func SplitDash(args []string) (own, command []string, sawDash bool) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:], true
		}
	}
	return args, nil, false
}

// ParseInterleaved parses flags that may come before or after the
// positional arguments, and returns those (flag.ErrHelp for -h).
func ParseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// FlagArg is the value of the last -name or --name (as "--name v" or
// "--name=v") among args before "--", read without parsing them: a
// command line that does not parse still reports in the format it asked
// for, and its --backend's password still stays out of the report.
func FlagArg(args []string, name string) string {
	own, _, _ := SplitDash(args)
	v := ""
	for i, a := range own {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		switch {
		case a == name && i+1 < len(own):
			v = own[i+1]
		case strings.HasPrefix(a, name+"="):
			v = a[len(name)+1:]
		}
	}
	return v
}
