package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// mongodFlags are mongod's names for cleave's listener and data directory, so that a
// command line written for mongod (`--dbpath d --port 27018 --bind_ip_all`) starts cleave
// the same way. They are applied over --listen and --dir after parsing; giving both
// spellings of one setting is an error rather than a silent choice.
type mongodFlags struct {
	dbpath    string
	port      int
	bindIP    string
	bindIPAll bool
}

// register adds the flags to fs.
func (m *mongodFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.dbpath, "dbpath", "", "mongod's name for --dir")
	fs.IntVar(&m.port, "port", 0, "mongod's port: the port of --listen")
	fs.StringVar(&m.bindIP, "bind_ip", "", "mongod's bind_ip: the host of --listen (one address)")
	fs.BoolVar(&m.bindIPAll, "bind_ip_all", false, "mongod's bind_ip_all: listen on every IPv4 address (--listen 0.0.0.0:port)")
}

// apply rewrites c.Dir and c.Listen from the mongod flags that were given; set reports
// which flags the command line named.
func (m *mongodFlags) apply(c *Config, set map[string]bool) error {
	var errs []error
	if set["dbpath"] {
		if set["dir"] {
			errs = append(errs, errors.New("--dbpath and --dir name the same setting: give one"))
		}
		c.Dir = m.dbpath
	}
	if !set["port"] && !set["bind_ip"] && !set["bind_ip_all"] {
		return errors.Join(errs...)
	}
	if set["listen"] {
		return errors.Join(append(errs, errors.New("--port, --bind_ip and --bind_ip_all set parts of --listen: give either"))...)
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("--listen %q: %w", c.Listen, err))...)
	}
	switch {
	case set["bind_ip"] && set["bind_ip_all"]:
		errs = append(errs, errors.New("--bind_ip and --bind_ip_all: give one"))
	case set["bind_ip_all"] && m.bindIPAll:
		host = "0.0.0.0"
	case set["bind_ip"]:
		if strings.Contains(m.bindIP, ",") {
			errs = append(errs, fmt.Errorf("--bind_ip %q: cleave listens on one address; use 0.0.0.0 (--bind_ip_all) to listen on all", m.bindIP))
		}
		host = m.bindIP
	}
	if set["port"] {
		if m.port < 0 || m.port > 65535 {
			errs = append(errs, fmt.Errorf("--port %d: must be between 0 and 65535", m.port))
		}
		port = strconv.Itoa(m.port)
	}
	c.Listen = net.JoinHostPort(host, port)
	return errors.Join(errs...)
}
