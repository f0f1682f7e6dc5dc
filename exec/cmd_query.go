package exec

import "context"

// addQueryCommands registers count, distinct and explain.
func (e *Executor) addQueryCommands(add func(*command, ...string)) {}

// explainFind explains a find.
func (e *Executor) explainFind(ctx context.Context, r *request, a *findArgs) error {
	return nil
}
