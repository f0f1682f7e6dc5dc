//go:build race

package command

// poisonRequests: End fills a finished Request with marker values (request_poison.go).
const poisonRequests = true
