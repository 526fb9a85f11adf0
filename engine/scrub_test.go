package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestScrubHidesEveryForm(t *testing.T) {
	base := errors.New("base")
	pw := "p@ss/w rd"
	err := Scrub(errors.Join(base, errors.New("dial "+pw+" p%40ss%2Fw+rd p@ss%2Fw%20rd")), pw, "", "ab")
	if msg := err.Error(); strings.Contains(msg, "p@ss") || strings.Contains(msg, "p%40ss") || strings.Count(msg, "***") != 3 {
		t.Errorf("Scrub = %q, want every form of the password hidden", msg)
	}
	if !errors.Is(err, base) {
		t.Error("Scrub lost the error's chain")
	}
	if Scrub(nil, pw) != nil {
		t.Error("Scrub(nil) is not nil")
	}
	short := errors.New("an ab")
	if Scrub(short, "ab") != short {
		t.Error("a password shorter than minSecret was scrubbed")
	}
}
