//go:build !race

package command

// poisonRequests: End only clears a finished Request (request_poison.go).
const poisonRequests = false
