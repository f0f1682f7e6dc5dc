package impex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// chunkBytes is about how much input one parse task holds: whole lines, so a task needs
// nothing from its neighbours.
const chunkBytes = 256 << 10

// lineChunk is a run of whole lines of the input and the number of its first line.
type lineChunk struct {
	seq, first int
	data       []byte
}

// parsedLine is one non-blank line of a chunk: its document (buf[start:end]) or why not.
type parsedLine struct {
	line, end int
	err       error
}

// parsedChunk is a chunk's documents, back to back in buf, in input order.
type parsedChunk struct {
	seq   int
	buf   []byte
	lines []parsedLine
}

// readJSONLines reads one Extended JSON document per line (canonical or relaxed); blank
// lines are skipped, and a line that is no document is rejected. One goroutine cuts the
// input into chunks of whole lines, parsers goroutines parse them, and the documents and
// rejections reach add and reject in input order, each with its line number.
func readJSONLines(r io.Reader, parsers int, add func(int, bson.Raw) error, reject func(int, error)) error {
	parsers = max(parsers, 1)
	chunks := make(chan lineChunk, parsers)
	results := make(chan parsedChunk, parsers)
	done := make(chan struct{}) // closed when the reader stops early
	readErr := make(chan error, 1)
	go func() {
		readErr <- splitLines(r, chunks, done)
		close(chunks)
	}()
	var wg sync.WaitGroup
	for range parsers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range chunks {
				select {
				case results <- parseChunk(c):
				case <-done:
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()
	err := deliverInOrder(results, add, reject)
	close(done)
	drain(results) // let the parsers finish
	if rerr := <-readErr; err == nil {
		err = rerr
	}
	return err
}

// splitLines sends r's contents to out in chunks of whole lines, numbered, until the end or
// until done is closed.
func splitLines(r io.Reader, out chan<- lineChunk, done <-chan struct{}) error {
	line, seq := 1, 0
	var carry []byte // a line begun in the previous read
	for {
		buf := make([]byte, len(carry), max(chunkBytes, 2*len(carry)))
		copy(buf, carry)
		n, err := io.ReadFull(r, buf[len(carry):cap(buf)])
		buf = buf[:len(carry)+n]
		eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !eof {
			return err
		}
		cut := len(buf)
		if !eof {
			cut = bytes.LastIndexByte(buf, '\n') + 1
		}
		if cut == 0 && !eof { // one line longer than buf: read on
			if len(buf) > maxLine {
				return fmt.Errorf("line %d: longer than %d bytes", line, maxLine)
			}
			carry = buf
			continue
		}
		carry = buf[cut:]
		if cut > 0 {
			select {
			case out <- lineChunk{seq: seq, first: line, data: buf[:cut]}:
			case <-done:
				return nil
			}
			seq++
			line += bytes.Count(buf[:cut], []byte{'\n'})
		}
		if eof {
			return nil
		}
	}
}

// parseChunk parses each non-blank line of c into one document.
func parseChunk(c lineChunk) parsedChunk {
	p := parsedChunk{seq: c.seq, buf: make([]byte, 0, len(c.data))}
	line := c.first
	for data := c.data; len(data) > 0; line++ {
		text := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		var err error
		if p.buf, err = parseDoc(p.buf, text); err != nil {
			p.lines = append(p.lines, parsedLine{line: line, err: err})
			continue
		}
		p.lines = append(p.lines, parsedLine{line: line, end: len(p.buf)})
	}
	return p
}

// deliverInOrder passes the parsed chunks' documents and rejections on in input order,
// until results ends or add fails.
func deliverInOrder(results <-chan parsedChunk, add func(int, bson.Raw) error, reject func(int, error)) error {
	pending := map[int]parsedChunk{}
	next := 0
	for p := range results {
		pending[p.seq] = p
		for {
			q, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			start := 0
			for _, l := range q.lines {
				if l.err != nil {
					reject(l.line, l.err)
					continue
				}
				if err := add(l.line, q.buf[start:l.end:l.end]); err != nil {
					return err
				}
				start = l.end
			}
		}
	}
	return nil
}

// drain discards what is left on results until it closes.
func drain(results <-chan parsedChunk) {
	for p := range results {
		_ = p
	}
}
