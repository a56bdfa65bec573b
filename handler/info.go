package handler

import (
	"context"
	"errors"
	"net/http"

	"github.com/loom-plugins/sandbox-cloudrun/api"
)

// healthz answers while the process serves HTTP (liveness).
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	writeBody(w, http.StatusOK, "application/json", []byte(`{"status":"ok"}`+"\n"))
}

// NotReady is an error of Config.Ready that says why the instance is not
// ready in words GET /readyz's problem may send: Reason follows "the
// instance is not ready: " in its detail, and Err, the cause, is only
// logged. Reason must carry no secret and no cause's text: /readyz is never
// authenticated. Another error's text is never sent.
type NotReady struct {
	Reason string
	Err    error
}

func (e *NotReady) Error() string {
	if e.Err == nil {
		return e.Reason
	}
	return e.Reason + ": " + e.Err.Error()
}

func (e *NotReady) Unwrap() error { return e.Err }

// readyz answers 200 once Ready reports the engine warm and the store
// reachable, and a retryable 503 problem until then, which says why when
// Ready says it with a NotReady.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			detail := "the instance is not ready: the engine is not warm yet or the script store is unreachable"
			var nr *NotReady
			if errors.As(err, &nr) && nr.Reason != "" {
				detail = "the instance is not ready: " + nr.Reason
			}
			writeProblem(w, r, api.NewProblem(api.ProblemNotReady, detail).WithCause(err))
			return
		}
	}
	writeBody(w, http.StatusOK, "application/json", []byte(`{"status":"ready"}`+"\n"))
}

// capabilities answers what the service enforces and accepts.
func (s *server) capabilities(w http.ResponseWriter, r *http.Request) {
	body := s.capsJSON
	if s.cfg.Isolation != nil {
		body = s.capabilitiesJSON()
	}
	writeBody(w, http.StatusOK, "application/json", append(body, '\n'))
}
