//go:build ignore

// Command hoprelay is a plain TCP relay for scripts/bench-hop.sh: put in front of one cleave
// node, it makes every request of a client pay one more hop over loopback with no database
// work on it, so that its CPU per operation plus the node's is the floor any design that
// forwards a request over TCP pays (docs/benchmarks.md, "What a hop to another node costs").
// Each client connection gets a connection of its own to the upstream and two goroutines that
// read into a buffer and write what they read, as a router forwarding a request would (read
// and write system calls, no splice). It is built by name and ignored by ./... (the build
// tag): it is no package of the module.
//
//	go build -o /tmp/hoprelay scripts/hoprelay/main.go
//	/tmp/hoprelay -listen 127.0.0.1:0 -upstream 127.0.0.1:27017 -addr-file /tmp/relay.addr
//
// It writes its listening address to -addr-file once it listens, and runs until killed.
package main

import (
	"flag"
	"log"
	"net"
	"os"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "address to forward to (host:port)")
	addrFile := flag.String("addr-file", "", "file to write the listening address to")
	flag.Parse()
	if *upstream == "" {
		log.Fatal("hoprelay: -upstream is required")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go relay(c.(*net.TCPConn), *upstream)
	}
}

// relay carries c's bytes to a new connection to upstream and back until either side closes.
func relay(c *net.TCPConn, upstream string) {
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		log.Print(err)
		_ = c.Close()
		return
	}
	up := u.(*net.TCPConn)
	done := make(chan struct{}, 2)
	go pump(up, c, done)
	go pump(c, up, done)
	<-done
	_ = c.Close()
	_ = up.Close()
	<-done
}

// pump writes to dst what it reads from src, through a buffer: one read and one write system
// call per message when the peer sends one at a time.
func pump(dst, src *net.TCPConn, done chan<- struct{}) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	done <- struct{}{}
}
