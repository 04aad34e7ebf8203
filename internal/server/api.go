package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// apiRoutes registers /api/v1, /healthz, /readyz, /metrics, the login and logout endpoints.
// Every route of the API is here, in one list.
func (s *Server) apiRoutes(e *echo.Echo) {
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.serveMetrics)
	e.POST("/login", s.login)
	// POST, so that the CSRF check covers it: a GET logout lets any page sign the operator out.
	e.POST("/logout", s.logout)
	// The MCP endpoint (Streamable HTTP): POST carries the calls; GET and DELETE are answered by
	// the SDK (405: a stateless server keeps no streams or sessions).
	e.Match([]string{http.MethodGet, http.MethodPost, http.MethodDelete}, mcpPath, s.serveMCP)

	// No group middleware: echo would add a catch-all route that turns 405 into 404. The rate
	// limit is in useMiddleware.
	api := e.Group("/api/v1")
	api.GET("/openapi.json", s.openAPI)
	api.GET("/summary", s.getSummary)
	api.GET("/status", s.getStatus)
	api.GET("/advice", s.getAdvice)
	api.GET("/queues", s.listQueues)
	api.GET("/queues/:queue", s.getQueue)
	api.GET("/queues/:queue/metrics", s.getQueueMetric)
	api.GET("/queues/:queue/groups", s.getQueueGroups)
	api.GET("/queues/:queue/messages", s.listMessages)
	api.GET("/queues/:queue/messages/:messageId", s.getMessage)
	api.GET("/queues/:queue/redrives", s.listRedrives)
	api.POST("/queues/:queue/redrives", s.startRedrive)
	api.POST("/queues/:queue/redrives/cancel", s.cancelRedrive)
	api.GET("/queues/:queue/redrives/:redriveId", s.getRedrive)
	api.POST("/queues/:queue/discards", s.startDiscard)
	api.GET("/queues/:queue/archive", s.listArchive)
	api.GET("/queues/:queue/archive/:messageId", s.getArchived)
	api.POST("/queues/:queue/archive/restores", s.startRestore)
	api.GET("/archive", s.listWholeArchive)
	api.GET("/audit", s.listAudit)
	api.GET("/events", s.streamEvents)
	api.GET("/notifications", s.getNotifications)
	api.POST("/notifications/test", s.sendTestNotification)
	api.POST("/embed-links", s.createEmbedLink)
}
