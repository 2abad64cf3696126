package config

import "github.com/paduraksa/paduraksa/internal/problem"

// ValidationError is one problem of a config document: a stable Code (one
// of the Code* constants, or the code of the package that owns the
// setting, such as "health.passive.window.invalid"), the Path of the
// offending value in JSON names ("hosts[2].routes[0].upstream"; empty for
// the whole document) and a human-readable message. Codes and paths are
// stable; messages may change. It is the one problem type of the
// library's configs: errors.As finds it whichever package reported it.
type ValidationError = problem.Error

// Problems returns the validation errors held by err: err itself if it is a
// *ValidationError, or every *ValidationError found in an [errors.Join]
// (nested joins and %w wrapping included), in order. It returns nil if err
// holds none.
func Problems(err error) []*ValidationError { return problem.All(err) }
