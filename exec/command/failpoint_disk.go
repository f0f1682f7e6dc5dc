package command

import (
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.uber.org/zap"
)

// diskSimulator is a shard whose free disk space a test can pretend (store.DB's hook).
type diskSimulator interface {
	SimulateAvailableDiskSpace(n int64) (readings int64)
}

// simulateAvailableDiskSpace configures MongoDB's failpoint of that name: while it is on,
// every shard reads data.bytes free bytes on its volume instead of asking the file system,
// so writes that add data are refused with OutOfDiskSpace 14031 when that is under the
// reserve (store/space.go):
//
//	{configureFailPoint: "simulateAvailableDiskSpace", mode: "alwaysOn", data: {bytes: 0}}
//
// Any mode but "off" turns it on ({times: n} and {skip: n} count readings in mongod; here
// the simulation lasts until "off"). It answers count: the readings the previous setting
// answered.
func (e *Server) simulateAvailableDiskSpace(r *Request) error {
	mode, _, _, err := parseFailPointMode(r.Body.Lookup("mode"))
	if err != nil {
		return err
	}
	n := int64(-1)
	if mode != fpOff {
		data, ok := r.Body.Lookup("data").DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "simulateAvailableDiskSpace needs data: {bytes: <number>}")
		}
		if n, err = args.Int64("configureFailPoint", "bytes", data.Lookup("bytes")); err != nil {
			return err
		}
		if n < 0 {
			return mongoerr.New(mongoerr.BadValue, "data.bytes must be at least 0, not %d", n)
		}
	}
	var count int64
	for _, sh := range e.Storage.Shards {
		if ds, ok := sh.(diskSimulator); ok {
			count += ds.SimulateAvailableDiskSpace(n)
		}
	}
	r.Conn.Log.Warn("set failpoint", zap.String("failpoint", "simulateAvailableDiskSpace"), zap.Int64("bytes", n))
	r.Out = bsonx.AppendNumber(r.Out, "count", count)
	return nil
}
