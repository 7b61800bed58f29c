package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Error is an admin API error: it carries the HTTP status it is answered
// with, as {"error": Message}.
type Error struct {
	// Status is the HTTP status; 0 means 500.
	Status int
	// Message is the "error" field of the answer.
	Message string
	// Err is the cause, for errors.Is and errors.As; it is not sent.
	Err error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given status and message.
func Errorf(status int, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Status: status, Message: err.Error(), Err: errors.Unwrap(err)}
}

// ErrNoRoute is what an Explainer returns when no route would serve the
// request or connection: 404 {"error": "no route"}.
var ErrNoRoute = &Error{Status: http.StatusNotFound, Message: "no route"}

// Response is a value an APIFunc returns to answer with a status other
// than 200; Body is written as JSON.
type Response struct {
	Status int
	Body   any
}

// errorBody is the JSON form of every error answer.
type errorBody struct {
	Error string `json:"error"`
}

// writeJSON writes v as indented JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // rules hold &&, and the API is not embedded in HTML
	enc.Encode(v)            // the status is sent; a failed write has no one to tell
}

// writeError answers err as {"error": ...} with the status an *Error
// carries, else 500.
func writeError(w http.ResponseWriter, err error) {
	status, msg := http.StatusInternalServerError, err.Error()
	var e *Error
	if errors.As(err, &e) {
		msg = e.Message
		if e.Status != 0 {
			status = e.Status
		}
	}
	writeJSON(w, status, errorBody{Error: msg})
}
