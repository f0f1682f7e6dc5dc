package server

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cleavedb/cleave/exec/command"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// hostInfo describes the machine, in hostInfo's shape.
func (h *Handlers) hostInfo(_ context.Context, r *command.Request) error {
	host, _ := os.Hostname()
	memMB := memTotalMiB()
	out := r.Out
	idx, out := bsoncore.AppendDocumentElementStart(out, "system")
	out = bsoncore.AppendDateTimeElement(out, "currentTime", time.Now().UnixMilli())
	out = bsoncore.AppendStringElement(out, "hostname", host)
	out = bsoncore.AppendInt32Element(out, "cpuAddrSize", 64)
	out = bsoncore.AppendInt64Element(out, "memSizeMB", memMB)
	out = bsoncore.AppendInt64Element(out, "memLimitMB", memMB)
	out = bsoncore.AppendInt32Element(out, "numCores", int32(runtime.NumCPU()))
	out = bsoncore.AppendStringElement(out, "cpuArch", runtime.GOARCH)
	out = bsoncore.AppendBooleanElement(out, "numaEnabled", false)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	idx, out = bsoncore.AppendDocumentElementStart(out, "os")
	out = bsoncore.AppendStringElement(out, "type", osType())
	out = bsoncore.AppendStringElement(out, "name", osName())
	out = bsoncore.AppendStringElement(out, "version", kernelVersion())
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	idx, out = bsoncore.AppendDocumentElementStart(out, "extra")
	out = bsoncore.AppendStringElement(out, "versionString", osName()+" "+kernelVersion())
	out = bsoncore.AppendStringElement(out, "kernelVersion", kernelVersion())
	out = bsoncore.AppendInt64Element(out, "pageSize", int64(os.Getpagesize()))
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	r.Out = out
	return nil
}

// osType is hostInfo.os.type: "Linux", "Darwin", "Windows" and so on.
func osType() string {
	if runtime.GOOS == "" {
		return "unknown"
	}
	return strings.ToUpper(runtime.GOOS[:1]) + runtime.GOOS[1:]
}

// osName is the distribution's PRETTY_NAME from /etc/os-release, or the OS type.
func osName() string {
	data, err := os.ReadFile("/etc/os-release")
	if err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
				return strings.Trim(v, `"`)
			}
		}
	}
	return osType()
}

// kernelVersion is the running kernel's release, where the OS reports it.
func kernelVersion() string {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// memTotalMiB is the machine's memory in MiB, from /proc/meminfo (0 where unavailable).
func memTotalMiB() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb / 1024
		}
	}
	return 0
}

// processMemoryMiB returns this process's resident and virtual memory in MiB, from
// /proc/self/statm; where that is unavailable it falls back to the Go runtime's view.
func processMemoryMiB() (rss, virt int64) {
	data, err := os.ReadFile("/proc/self/statm")
	if err == nil {
		f := strings.Fields(string(data))
		if len(f) >= 2 {
			pages, _ := strconv.ParseInt(f[0], 10, 64)
			res, _ := strconv.ParseInt(f[1], 10, 64)
			page := int64(os.Getpagesize())
			return res * page >> 20, pages * page >> 20
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys >> 20), int64(ms.Sys >> 20)
}
