package guard

import (
	"context"
	"fmt"
	"io"
)

// ReadOutput writes the job's output (job.log) to w from byte from, its
// secrets [REDACTED]; a negative from counts back from the end of what
// the job printed so far. Without follow it returns once it has written
// what the job printed by its first look; with follow it goes on until
// the job ended and all its output is written, or ctx ends. It returns
// the offset after what it wrote. It renews no lease and enforces no
// rule: it is a second reader's look at a run another client follows,
// or none does (launch logs).
func (r *Run) ReadOutput(ctx context.Context, w io.Writer, from int64, follow bool) (int64, error) {
	if err := r.liveConn(ctx); err != nil {
		return from, err
	}
	out := &redactWriter{w: w, red: r.redacting()}
	offset, end := from, int64(-1)
	for {
		st, b, err := r.pollAt(ctx, max(offset, 0), false)
		if err != nil {
			return max(offset, 0), fmt.Errorf("reading the job's output: %w", err)
		}
		if offset < 0 {
			// The first look says how long the log is: start back from it.
			offset = max(st.LogSize+offset, 0)
			continue
		}
		if end < 0 {
			end = st.LogSize
		}
		if _, err := out.Write(b); err != nil {
			return offset, fmt.Errorf("writing the job's output: %w", err)
		}
		offset += int64(len(b))
		done := offset >= st.LogSize && (st.Ended() || !st.Started())
		if !follow && (offset >= end || len(b) == 0) || done {
			return offset, out.Flush()
		}
		if len(b) == maxChunk || !follow {
			continue
		}
		if err := r.cfg.clock.Sleep(ctx, r.rec.Poll); err != nil {
			return offset, err
		}
	}
}
