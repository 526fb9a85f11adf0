package engine

import (
	"net/url"
	"strings"
)

// minSecret is the shortest password Scrub hides: a shorter one would
// blank out parts of ordinary words, and is no secret anyway.
const minSecret = 4

// Scrub hides every form of the given passwords (as typed, query- and
// path-escaped, as a URL's userinfo writes it) in err's text: a driver's
// error may quote what it was given. The result keeps err's chain, for
// errors.Is; nil stays nil.
func Scrub(err error, passwords ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, p := range passwords {
		if len(p) < minSecret {
			continue
		}
		_, info, _ := strings.Cut(url.UserPassword("", p).String(), ":")
		for _, form := range []string{p, url.QueryEscape(p), url.PathEscape(p), info} {
			msg = strings.ReplaceAll(msg, form, "***")
		}
	}
	if msg == err.Error() {
		return err
	}
	return scrubbed{msg: msg, err: err}
}

// scrubbed is an error whose text lost its secrets.
type scrubbed struct {
	msg string
	err error
}

func (s scrubbed) Error() string { return s.msg }
func (s scrubbed) Unwrap() error { return s.err }
