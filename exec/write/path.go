package write

import (
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
)

// Path applies document writes: it finds the documents a statement targets (through
// query), locks their keys, re-reads them, applies the change, keeps every index in step,
// checks unique keys and commits one atomic batch per shard (writer.go, write_op.go).
// Sharding plugs in through the StageHook it is given.
type Path struct {
	cat   *catalog.Catalog
	query *query.Engine
	hook  StageHook
	log   *zap.Logger
}

// NewPath returns the write path over cat's collections; hook, when not nil, sees every
// staged document write.
func NewPath(cat *catalog.Catalog, q *query.Engine, hook StageHook) *Path {
	return &Path{cat: cat, query: q, hook: hook, log: zap.NewNop()}
}

// WithLogger sets the logger of the writes a validator lets through with a warning
// (validationAction "warn") and returns wp.
func (wp *Path) WithLogger(l *zap.Logger) *Path {
	wp.log = l
	return wp
}
