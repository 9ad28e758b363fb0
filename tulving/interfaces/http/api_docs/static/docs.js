// Swagger UI over this server's own OpenAPI document: every asset comes from this origin
// (the page's Content-Security-Policy allows nothing else), and the online validator badge
// is off (it would send the document to a third party).
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "../openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
