package agg

import (
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// parseQuantile compiles the argument of the $percentile and $median accumulators (and
// window functions): {input, p, method} and {input, method}.
func (a *accSpec) parseQuantile(env *Env, arg bsoncore.Value) error {
	q, err := expr.ParseQuantile(a.op, arg, mongoerr.Location7429703, env.Opts)
	if err != nil {
		return err
	}
	a.quant = q
	a.input, err = env.CompileExpr(q.Input)
	return err
}

// quantileState is $percentile and $median: every numeric input (NaN aside) as a double,
// sorted when a result is asked for. Shards' states merge by concatenation.
type quantileState struct {
	q      *expr.Quantile
	vals   []float64
	sorted int // vals[:sorted] is in order
}

// add implements accState: numbers count, anything else is ignored.
func (st *quantileState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if expr.NumRank(v.Type) == 0 {
		return 0, nil
	}
	f := expr.AsFloat(v)
	if math.IsNaN(f) {
		return 0, nil
	}
	st.vals = append(st.vals, f)
	return 8, nil
}

// result implements accState.
func (st *quantileState) result() (bsoncore.Value, error) {
	switch n := len(st.vals); {
	case n-st.sorted > 8:
		slices.Sort(st.vals)
	default: // a window grown by a few: insert them, O(n) rather than a sort each time
		for i := st.sorted; i < n; i++ {
			f := st.vals[i]
			j, _ := slices.BinarySearch(st.vals[:i], f)
			copy(st.vals[j+1:i+1], st.vals[j:i])
			st.vals[j] = f
		}
	}
	st.sorted = len(st.vals)
	return st.q.Value(expr.Percentiles(st.vals, st.q.Ps)), nil
}

// merge implements mergeableState.
func (st *quantileState) merge(o accState) (int, error) { //nolint:unparam // implements mergeableState
	ob := o.(*quantileState)
	st.vals = append(st.vals, ob.vals...)
	return 8 * len(ob.vals), nil
}
