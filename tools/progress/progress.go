// Package progress shows how far a client tool (cleave dump, load, export, import, restore
// --until) has come: on a terminal, a bar redrawn in place at most ten times a second; on
// anything else (a pipe, a file, a CI log), a plain line every second, as mongodump writes
// its progress, so that logs stay readable.
//
//	b := progress.New(os.Stderr, "app.orders", total) // total < 0: unknown
//	for … { b.Add(n) }
//	b.Done()
//
// A Bar is safe for concurrent use. The line on a terminal:
//
//	app.orders  [##########..........]  512000/1000000 (51.2%)  48210/s
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Intervals between two renderings: on a terminal, and of the plain lines elsewhere.
const (
	terminalEvery = 100 * time.Millisecond
	plainEvery    = time.Second
)

// width is the number of cells of a bar.
const width = 20

// Bar is the progress of one task: a count towards a total (or of unknown total).
type Bar struct {
	w     io.Writer
	label string
	total int64
	tty   bool
	start time.Time
	mu    struct {
		sync.Mutex
		n    int64
		last time.Time // last rendering
		done bool
	}
}

// New returns the bar of a task named label whose total is total (negative: unknown),
// written to w, as a bar when w is a terminal and as plain lines otherwise.
func New(w io.Writer, label string, total int64) *Bar {
	b := &Bar{w: w, label: label, total: total, tty: IsTerminal(w), start: time.Now()}
	b.mu.last = b.start
	return b
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Add counts n more.
func (b *Bar) Add(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.n += n
	b.maybeRender()
}

// Set sets the count to n.
func (b *Bar) Set(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.n = n
	b.maybeRender()
}

// maybeRender renders the bar if its interval passed. b.mu is held.
func (b *Bar) maybeRender() {
	every := plainEvery
	if b.tty {
		every = terminalEvery
	}
	if now := time.Now(); !b.mu.done && now.Sub(b.mu.last) >= every {
		b.mu.last = now
		b.render(now)
	}
}

// Done renders the final count once, as mongodump ends each collection with its full bar,
// and ends the terminal's line.
func (b *Bar) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.done {
		return
	}
	b.mu.done = true
	b.render(time.Now())
	if b.tty {
		_, _ = io.WriteString(b.w, "\n")
	}
}

// render writes the current line. b.mu is held.
func (b *Bar) render(now time.Time) {
	line := Line(b.label, b.mu.n, b.total, now.Sub(b.start))
	if b.tty {
		// \r and clearing to the end of the line redraw it in place.
		_, _ = fmt.Fprintf(b.w, "\r%s\x1b[K", line)
		return
	}
	_, _ = fmt.Fprintf(b.w, "%s\t%s\n", now.Format("2006-01-02T15:04:05.000-0700"), line)
}

// Line is the text of a bar: label, the bar and percentage when the total is known, the
// count and the rate since the start.
func Line(label string, n, total int64, elapsed time.Duration) string {
	var sb strings.Builder
	sb.WriteString(label)
	sb.WriteString("  ")
	if total > 0 {
		fill := int(min(n, total) * width / total)
		fmt.Fprintf(&sb, "[%s%s]  %d/%d (%.1f%%)", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
			n, total, float64(min(n, total))*100/float64(total))
	} else {
		fmt.Fprintf(&sb, "%d", n)
	}
	if s := elapsed.Seconds(); s > 0 {
		fmt.Fprintf(&sb, "  %.0f/s", float64(n)/s)
	}
	return sb.String()
}
