package baton

import (
	"fmt"
	"math"
)

// FloorToken returns the fencing token of a grant whose engine counter
// reads raw, on a deployment whose token floor is floor: raw + floor (see
// "Token floor" in the package doc). A sum past math.MaxUint64 would wrap
// to a small token that every fenced resource rejects as stale, or worse,
// that a fresh resource accepts below tokens already issued; it is refused
// with an error wrapping ErrInvalidOption instead.
func FloorToken(raw, floor uint64) (uint64, error) {
	if raw > math.MaxUint64-floor {
		return 0, fmt.Errorf("baton: token floor %d plus the engine's counter %d overflows uint64 (lower the floor): %w",
			floor, raw, ErrInvalidOption)
	}
	return raw + floor, nil
}
