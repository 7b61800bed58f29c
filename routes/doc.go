// Package routes is edgeway's configuration language: a custom lexer, a
// grammar and an AST of directives with their arguments and blocks, checked
// against one vocabulary table that says which directive may appear where.
// It only knows the syntax: the conf package turns the checked AST into a
// typed configuration. The tradeoff is a generic grammar (every line is
// `name args... [{ ... }]`) with the vocabulary kept as data, so that errors
// can always say what was expected and a new directive is one table row.
//
// The grammar is the participle one in reference.go (ParseReference).
// Loading uses an equivalent hand-written parser (Parse, about 20 times
// faster on a 10,000-route file: BenchmarkParse10k against
// BenchmarkParseReference10k), kept in agreement with it by
// TestReferenceAgrees and FuzzReferenceAgrees.
package routes
