// Command wms-stock tells the oversold-shelf story of a warehouse
// management system: two picking services reserve stock of one SKU under
// a baton lock, one of them freezes after reading the stock, and only the
// fenced stock row keeps the shelf from going negative.
//
//	cd examples && go run ./wms-stock
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/baton-go/baton/examples/internal/story"
)

func main() { story.Main("wms-stock", run) }

// Result is what happened in both rounds of the story.
type Result struct {
	Unfenced Round // the same story against a stock row that trusts the lock
	Fenced   Round // against the stock row fenced with the lock's token
}

// run plays the story twice in dir, first against the unfenced twin (what
// goes wrong), then against the fenced row (what baton changes).
func run(ctx context.Context, w io.Writer, dir string) (Result, error) {
	var res Result
	var err error
	if res.Unfenced, err = play(ctx, w, dir, false); err != nil {
		return res, fmt.Errorf("unfenced round: %w", err)
	}
	if res.Fenced, err = play(ctx, w, dir, true); err != nil {
		return res, fmt.Errorf("fenced round: %w", err)
	}
	return res, nil
}
