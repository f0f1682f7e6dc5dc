package command

import (
	"context"
	"slices"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
)

// Command is one entry of the command table: a command's handler and every property the
// command path reads of it, aliases included. Nothing else keys a command's properties by
// its name; an alias is another spelling of the same entry.
type Command struct {
	// Name is the command as MongoDB spells it; Aliases are its other spellings
	// (findandmodify, collstats, ...). listCommands lists every spelling.
	Name    string
	Aliases []string
	// Run runs the command: it appends its reply fields to r.Out, or returns the error that
	// replaces the reply.
	Run  func(ctx context.Context, r *Request) error
	Help string
	// Action is the privilege the command needs on its database (or the cluster) when access
	// control is on; every command declares one (auth.ActionNone for the handshake).
	Action auth.Action
	// Needs, when set, replaces the one need {action, db, collection} with what this
	// invocation needs (aggregate with $out on another database, renameCollection, ...).
	Needs func(r *Request, def auth.Need) []auth.Need
	// AdminOnly commands must run against the admin database.
	AdminOnly bool
	// Counter is the serverStatus.opcounters field the command counts towards.
	Counter OpCounter
	// Props are the command's properties (Cursor, InTxn, ...).
	Props Props
	// DeprecatedIn is the Stable API version that deprecates the command ("": none).
	DeprecatedIn string
	// Brief, set on a Direct command, reports whether the request whose body it gets will run
	// briefly and wait for nothing (not even this node's catalog catching up): then the
	// goroutine reading its pipelined internal connection runs it, with no hand-off to a
	// worker (wire.Inliner). body is not validated yet: Brief reads it with bounds checks
	// only, and says false when in doubt.
	Brief func(body bsoncore.Document) bool
}

// Has reports whether c has every property of p; a nil c (a command not found) has none.
func (c *Command) Has(p Props) bool { return c != nil && c.Props&p == p }

// Props are the properties of a command the command path reads, as a bit set.
type Props uint16

// The properties of a command.
const (
	// OpensCursor commands open cursors whose compiled filters, projections and pipelines alias
	// the request body: dispatch gives them a private copy of the body, which otherwise
	// aliases the connection's reused read buffer (a single-batch find excepted).
	OpensCursor Props = 1 << iota
	// InTxn commands may run in a multi-document transaction (MongoDB's list, less what
	// cleave lacks); create and createIndexes run at once, on a new collection only.
	InTxn
	// TxnCreates statements may create the collection they name inside a transaction.
	TxnCreates
	// SnapshotRead commands read at a snapshot under readConcern snapshot outside a
	// transaction.
	SnapshotRead
	// StaleRetry reads are run again from the start by a router answered StaleConfig.
	StaleRetry
	// Explainable commands are those explain accepts.
	Explainable
	// RetryableWrite commands are those drivers retry as retryable writes.
	RetryableWrite
	// WriteConcern commands take a write concern, and so may answer a writeConcernError.
	WriteConcern
	// Legacy commands still run when they arrive as OP_QUERY (MongoDB 7.0's
	// checkAllowedOpQueryCommand: the handshake and what old drivers send before OP_MSG).
	Legacy
	// APIV1 commands are in version 1 of the Stable API (MongoDB's stable-api-changelog, as
	// a mongod of the 8.x line answers under apiStrict).
	APIV1
	// Direct commands are internal requests of one node to another that answer without the
	// command path's steps for clients: dispatch authorizes them (the internal action),
	// gives them the priority their router sent, and runs them (under the failCommand
	// failpoint, which tests use to hold them); no session, transaction, read concern,
	// Stable API check or stale retry applies (a compact point read, _cleaveShardGet).
	// currentOp and killOp reach them as any command.
	Direct
	// ReadConcern commands take a read concern: the cluster-wide default read concern
	// (setDefaultRWConcern) applies to those that carry none.
	ReadConcern
)

// OpCounter names a field of serverStatus.opcounters.
type OpCounter uint8

// The fields of serverStatus.opcounters; the zero value is "command".
const (
	OpCommand OpCounter = iota
	OpQuery
	OpInsert
	OpUpdate
	OpDelete
	OpGetMore
	numOpCounters
)

// Counters are what serverStatus counts: commands received, by opcounters field, and the
// documents written and read (serverStatus.metrics.document).
type Counters struct {
	Ops                                                  [numOpCounters]atomic.Int64
	InsertedDocs, UpdatedDocs, DeletedDocs, ReturnedDocs atomic.Int64
}

// Count counts one command of kind op.
func (c *Counters) Count(op OpCounter) { c.Ops[op].Add(1) }

// Table is the command table: every command by every spelling.
type Table struct {
	byName map[string]*Command
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{byName: map[string]*Command{}} }

// Add registers c under its name and aliases; a spelling registered twice is a programming
// error.
func (t *Table) Add(c *Command) {
	for _, n := range append([]string{c.Name}, c.Aliases...) {
		if t.byName[n] != nil {
			panic("command registered twice: " + n)
		}
		t.byName[n] = c
	}
}

// Lookup returns the entry spelled name and that spelling as a string the table holds (so
// that a request names its command without a string made for it); nil when unknown.
func (t *Table) Lookup(name []byte) (*Command, string) {
	c := t.byName[string(name)]
	if c == nil {
		return nil, ""
	}
	if c.Name == string(name) {
		return c, c.Name
	}
	for _, a := range c.Aliases {
		if a == string(name) {
			return c, a
		}
	}
	return c, string(name)
}

// Get returns the entry spelled name, nil when unknown.
func (t *Table) Get(name string) *Command { return t.byName[name] }

// Names returns every spelling, sorted (listCommands).
func (t *Table) Names() []string {
	names := make([]string, 0, len(t.byName))
	for n := range t.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// commandTable returns every command cleave answers.
func (e *Server) commandTable(families []Family) *Table {
	t := NewTable()
	add := t.Add
	for _, f := range families {
		f(e, add)
	}
	return t
}

// Family registers a family of commands, whose handlers live in a package of their own
// above this one (exec/command/users, ...), on s.
type Family func(s *Server, add func(*Command))
