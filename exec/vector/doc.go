// Package vector is the approximate nearest-neighbour search of vectorSearch indexes: the
// index definitions (MongoDB's {fields: [{type: "vector", ...}, {type: "filter", ...}]}),
// the similarities and MongoDB's scores, and an HNSW graph (Malkov and Yashunin's
// hierarchical navigable small world, written here: no maintained Go library was available
// to this build). It knows no collections or storage: exec/vecindex keeps one graph per
// shard, index and vector field, fed from the shard's documents.
//
// Invariants:
//   - Score(dist) is MongoDB's score: euclidean 1/(1+d²), cosine (1+cos)/2, dotProduct
//     (1+a·b)/2, so the nearest node has the highest score;
//   - Exact returns the k nearest live nodes that accept takes, exactly; Search returns
//     nodes that accept takes and that are not deleted, nearest first, and its recall
//     against Exact is measured by TestGraphRecall (≥ 0.95 at 10 of ef 100);
//   - a deleted node is never returned but still links the graph until it is rebuilt;
//   - a graph quantized (SetQuantization(QuantScalar), quant.go, or QuantBinary, binary.go)
//     is built with the float32 vectors like any other and walked over one byte (or one bit)
//     a dimension, its ef candidates rescored with the float32 vectors: Search's distances
//     are always the float32 ones; the codes are derived state (computed from the vectors,
//     never saved);
//   - a $vectorSearch walks numCandidates × Oversample candidates (its ef), and stops
//     earlier once the candidates left are StopRatio times as far as the k-th result.
//
// Usage:
//
//	def, err := vector.ParseDef(definition)
//	g := vector.NewGraph(def.Vectors[0].Sim, vector.DefaultM, vector.DefaultEFBuild, 1)
//	n := g.Add(vec)
//	res, examined := g.Search(query, 10, 100, nil) // res[0].Node == n, nearest first
//	score := def.Vectors[0].Sim.Score(res[0].Dist)
package vector
