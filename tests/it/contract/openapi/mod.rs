//! The OpenAPI document (`GET /openapi.json`) against what the daemon does:
//! it is valid OpenAPI, its routes are exactly the ones served (and the
//! ones docs/api.md lists), its filters are query parameters, and every
//! request object it says is closed (`additionalProperties: false`) is
//! refused by the daemon with an unknown field at any depth.

mod document;
mod routes;
mod schemas;
