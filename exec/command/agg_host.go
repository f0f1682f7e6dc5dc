package command

import (
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// serverStages are the aggregation stages the executor provides to pipelines (agg.Host):
// those that write, report on the server or list its sessions.
var serverStages = map[string]func(e *Server) agg.StageParser{
	"$out":               func(*Server) agg.StageParser { return parseOutStage },
	"$merge":             func(*Server) agg.StageParser { return parseMergeStage },
	"$collStats":         func(e *Server) agg.StageParser { return e.parseCollStatsStage },
	"$indexStats":        func(e *Server) agg.StageParser { return e.parseIndexStatsStage },
	"$currentOp":         func(e *Server) agg.StageParser { return e.parseCurrentOpStage },
	"$listLocalSessions": func(e *Server) agg.StageParser { return e.parseListLocalSessionsStage },
	"$listSessions":      func(e *Server) agg.StageParser { return e.parseListSessionsStage },
	// refused as MongoDB 7.0 does without Atlas (search_index.go)
	"$listSearchIndexes": func(*Server) agg.StageParser { return parseListSearchIndexesStage },
}

// StageParser implements agg.Host.
func (e *Server) StageParser(name string) agg.StageParser {
	if f := serverStages[name]; f != nil {
		return f(e)
	}
	return nil
}

// The server's stages implement agg's optional interfaces; these fail to compile if a
// method's name or signature drifts (an unexported method never satisfies them).
var (
	_ agg.SourceStage    = (*collStatsStage)(nil)
	_ agg.SourceStage    = (*indexStatsStage)(nil)
	_ agg.SourceStage    = (*listSessionsStage)(nil)
	_ agg.Collectionless = (*currentOpStage)(nil)
	_ agg.Collectionless = (*listLocalSessionsStage)(nil)
)

// parseListSearchIndexesStage refuses $listSearchIndexes as MongoDB 7.0 Community does,
// whatever its argument.
func parseListSearchIndexesStage(_ *agg.Env, _ string, _ bsoncore.Value) (agg.Stage, error) {
	return nil, mongoerr.New(mongoerr.Location6047401, "$listSearchIndexes stage is only allowed on MongoDB Atlas")
}
