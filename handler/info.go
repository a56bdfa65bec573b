package handler

import (
	"context"
	"net/http"

	"github.com/loom-plugins/sandbox-cloudrun/api"
)

// healthz answers while the process serves HTTP (liveness).
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	writeBody(w, http.StatusOK, "application/json", []byte(`{"status":"ok"}`+"\n"))
}

// readyz answers 200 once Ready reports the engine warm and the store
// reachable, and a retryable 503 problem until then.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			p := newProblem(api.ProblemNotReady, http.StatusServiceUnavailable,
				"the instance is not ready: the engine is not warm yet or the script store is unreachable").retry().withCause(err)
			p.retryAfter = "1"
			writeProblem(w, r, p)
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
