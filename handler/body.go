package handler

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/loom-plugins/sandbox-cloudrun/api"
)

// readBody reads the request body, already capped by capBody. How long the
// client may take to send it is the http.Server's ReadTimeout (main sets
// it), which also bounds how long a slow client holds the concurrency gate.
// It returns nil and no problem when the client left while sending the body.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *api.Problem) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		return body, nil
	}
	// The rest of the body is not worth waiting for: close the connection
	// after the answer instead of draining it.
	w.Header().Set("Connection", "close")
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLargeBody(s.lim.MaxRequestBytes)
	case errors.Is(err, os.ErrDeadlineExceeded):
		// net/http cancels the request's context too, on the read error:
		// the error, not the context, says what happened.
		return nil, api.NewProblem(api.ProblemBodyTimeout,
			"the request body did not arrive within the server's read timeout; a retry may succeed")
	case r.Context().Err() != nil:
		return nil, nil
	}
	return nil, api.NewProblem(api.ProblemInvalidRequest, "the body could not be read: "+err.Error()).WithCause(err)
}

// requestBody reads the body of an evaluation request, or answers the
// request itself (its problem, or nothing for a client that left) and
// reports false.
func (s *server) requestBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, p := s.readBody(w, r)
	switch {
	case p != nil:
		writeProblem(w, r, p)
		return nil, false
	case body == nil:
		s.stopped(w, r, r.Context()) // the client left
		return nil, false
	}
	return body, true
}

func tooLargeBody(max int64) *api.Problem {
	return api.NewProblem(api.ProblemRequestTooLarge,
		fmt.Sprintf("the request body is over the server's maxRequestBytes of %d bytes", max)).
		WithLimit("maxRequestBytes", max)
}
