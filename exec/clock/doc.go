// Package clock is the server's cluster time, MongoDB's hybrid logical clock: a Timestamp
// that never goes back, advances with every write, follows the wall clock and moves forward
// to the $clusterTime clients gossip. Replies carry it as $clusterTime and operationTime
// (causal consistency), snapshot reads name a point of it, and documents written with
// Timestamp(0, 0) get a tick of it (empty_ts.go).
//
//	var c clock.Clock
//	t := c.Tick()                        // a write's time
//	reply = clock.AppendClusterTime(reply, c.Now())
package clock
