package exec

// listenAddr is the address the server listens on, from the parsed configuration.
func (e *Executor) listenAddr() string {
	net, ok := e.opts.Parsed.Lookup("net").DocumentOK()
	if !ok {
		return "localhost:27017"
	}
	host, _ := net.Lookup("bindIp").StringValueOK()
	port, _ := net.Lookup("port").StringValueOK()
	return host + ":" + port
}
