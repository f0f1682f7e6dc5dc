package js

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// CodeJSInterpreterFailure is JSInterpreterFailure (139), every JavaScript failure.
const CodeJSInterpreterFailure = mongoerr.JSInterpreterFailure

// maxCallStack bounds recursion, so that a runaway function fails (139 "too much
// recursion" in MongoDB) instead of growing the goroutine's stack.
const maxCallStack = 1000

// MaxResultSize bounds what one evaluation may return, BSON's document limit.
const MaxResultSize = 16 << 20

// enabled is the process-wide switch (--javascript-enabled); on by default, as mongod's
// security.javascriptEnabled.
var enabled atomic.Bool

func init() { enabled.Store(true) } //nolint:gochecknoinits // a default, not a registration

// SetEnabled switches server-side JavaScript on or off for the whole process.
func SetEnabled(on bool) { enabled.Store(on) }

// Enabled reports whether server-side JavaScript may run.
func Enabled() bool { return enabled.Load() }

// Scope runs one command's JavaScript. It is safe for concurrent use.
type Scope struct {
	ctx   context.Context //nolint:containedctx // a Scope lives for one command and bounds its evaluations
	limit time.Time       // the command's maxTimeMS from its start (zero: none)
	progs sync.Map        // source → *compiled
	vms   sync.Pool       // *vm
}

// compiled is a function source compiled once.
type compiled struct {
	prog *goja.Program
	err  error
}

// vm is a runtime with its helpers and the functions it has instantiated.
type vm struct {
	rt    *goja.Runtime
	funcs map[*goja.Program]goja.Callable
	ctx   context.Context //nolint:containedctx // set for one evaluation, for sleep
}

// NewScope returns a scope bound to ctx and to maxTime from now (0: none): an evaluation
// ends when ctx does or maxTime has passed. A command's filter is compiled before its
// context gets its deadline, and a cursor's getMores evaluate it after the find's context
// has ended: maxTime keeps bounding them, as maxTimeMS bounds a cursor's life in MongoDB.
func NewScope(ctx context.Context, maxTime time.Duration) *Scope {
	if ctx == nil {
		ctx = context.Background()
	}
	s := &Scope{ctx: ctx}
	if maxTime > 0 {
		s.limit = time.Now().Add(maxTime)
	}
	return s
}

// compile returns the program of a function source, compiling it once per scope. src is
// either a function expression or, for $where, statements whose last value is the result.
func (s *Scope) compile(src string, where bool) (*goja.Program, error) {
	key := src
	if where {
		key = "\x00where\x00" + src
	}
	if c, ok := s.progs.Load(key); ok {
		return c.(*compiled).prog, c.(*compiled).err
	}
	prog, err := goja.Compile("", wrapSource(src, where), false)
	if err != nil {
		err = interpreterError(err)
	}
	s.progs.Store(key, &compiled{prog: prog, err: err})
	return prog, err
}

// wrapSource turns src into an expression whose value is the function to call. A $where
// that is not a function is a body: with a return statement it is the function's body,
// otherwise its last expression's value is the result (MongoDB's shell does the same).
func wrapSource(src string, where bool) string {
	t := strings.TrimSpace(src)
	if !where || strings.HasPrefix(t, "function") || strings.Contains(t, "=>") && !strings.Contains(t, "return") {
		return "(" + t + "\n)"
	}
	if strings.Contains(t, "return") {
		return "(function() {" + t + "\n})"
	}
	q, _ := json.Marshal(t) // a JSON string is a JavaScript string literal
	return "(function() { return eval(" + string(q) + "); })"
}

// get returns a runtime from the pool, bound to the scope's context.
func (s *Scope) get() (*vm, error) {
	v, _ := s.vms.Get().(*vm)
	if v == nil {
		var err error
		if v, err = newVM(); err != nil {
			return nil, err
		}
	}
	v.ctx = s.ctx
	return v, nil
}

// function returns the callable of prog in v, instantiating it once per runtime.
func (v *vm) function(prog *goja.Program) (goja.Callable, error) {
	if f, ok := v.funcs[prog]; ok {
		return f, nil
	}
	val, err := v.rt.RunProgram(prog)
	if err != nil {
		return nil, interpreterError(err)
	}
	f, ok := goja.AssertFunction(val)
	if !ok {
		return nil, mongoerr.New(CodeJSInterpreterFailure, "TypeError: the source is not a function: %s", val.String())
	}
	v.funcs[prog] = f
	return f, nil
}

// run calls fn in a runtime of the pool under the scope's context: the context's end
// interrupts it. A context that had ended before, with its command (a cursor's getMore
// evaluating a find's filter), bounds the run by its deadline only.
func (s *Scope) run(fn func(v *vm) error) error {
	v, err := s.get()
	if err != nil {
		return err
	}
	ctx := s.ctx
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		ctx = context.WithoutCancel(ctx) // the command that compiled it has returned
	}
	if !s.limit.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, s.limit)
		defer cancel()
	}
	v.ctx = ctx
	if err := ctx.Err(); err != nil {
		return timeError(err)
	}
	stop := context.AfterFunc(ctx, func() { v.rt.Interrupt(ctx.Err()) })
	err = fn(v)
	if !stop() {
		// The interrupt may have fired after fn returned: clear it so the runtime can be reused.
		v.rt.ClearInterrupt()
		if err == nil {
			err = ctx.Err()
		}
	}
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if cerr, ok := ie.Value().(error); ok {
			err = timeError(cerr)
		} else {
			err = mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
		}
		v.rt.ClearInterrupt()
	} else if e := ctx.Err(); e != nil && err != nil {
		err = timeError(e)
	}
	v.ctx = nil
	s.vms.Put(v)
	return err
}

// timeError maps the end of a context to MongoDB's answer.
func timeError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit")
	}
	return mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
}

// interpreterError turns a goja failure into JSInterpreterFailure 139 with the exception's
// text, MongoDB's "<Name>: <message> :\n<stack>".
func interpreterError(err error) error {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return me
	}
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		return err
	}
	var ex *goja.Exception
	var se *goja.CompilerSyntaxError
	var so *goja.StackOverflowError
	switch {
	case errors.As(err, &ex):
		msg := ex.Value().String()
		if o, ok := ex.Value().(*goja.Object); ok {
			if g, ok := o.Export().(error); ok {
				var me *mongoerr.Error
				if errors.As(g, &me) {
					return me
				}
			}
		}
		return mongoerr.New(CodeJSInterpreterFailure, "%s :\n%s", msg, stackText(ex))
	case errors.As(err, &se):
		return mongoerr.New(CodeJSInterpreterFailure, "SyntaxError: %s", se.Message)
	case errors.As(err, &so):
		return mongoerr.New(CodeJSInterpreterFailure, "InternalError: too much recursion")
	}
	return mongoerr.New(CodeJSInterpreterFailure, "%s", err.Error())
}

// stackText renders an exception's stack, one frame a line.
func stackText(ex *goja.Exception) string {
	var b strings.Builder
	for _, f := range ex.Stack() {
		p := f.Position()
		fmt.Fprintf(&b, "%s@:%d:%d\n", f.FuncName(), p.Line, p.Column)
	}
	return b.String()
}

// sleep is the sleep(ms) helper: it waits, or ends with the evaluation's context.
func (v *vm) sleep(ms int64) {
	ctx := v.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		v.rt.Interrupt(ctx.Err())
	}
}
