//! The OpenAPI document's post-processing: what no handler's annotation
//! can say, set by rule over the whole document, so a new route gets it
//! without anyone remembering to: the document's own route, the refusals
//! of the guard and the extractors every request meets, and the patterns
//! of what the parsers take.

use super::OPENAPI_PATH;

/// The document as served: what the annotations say, then each rule.
pub(super) fn finish(mut openapi: utoipa::openapi::OpenApi) -> serde_json::Value {
    describe_the_document(&mut openapi);
    declare_common_responses(&mut openapi);
    declare_contact_pattern(&mut openapi);
    declare_state_patterns(&mut openapi);
    declare_event_stream_events(&mut openapi);
    let mut document = serde_json::to_value(openapi).expect("the document serialises");
    // The rules utoipa's types have no words for (`if`, `not`, ...), on the JSON.
    super::request_schemas::declare_what_the_handlers_take(&mut document);
    document
}

/// `GET /openapi.json` is served by hand (it serves the finished document),
/// so no annotation describes it; this does.
fn describe_the_document(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::{HttpMethod, OperationBuilder};
    use utoipa::openapi::{ContentBuilder, ObjectBuilder, ResponseBuilder};
    let operation = OperationBuilder::new()
        .tag("daemon")
        .operation_id(Some("openapi"))
        .summary(Some("This document: the API as OpenAPI 3.1"))
        .response(
            "200",
            ResponseBuilder::new()
                .description("The OpenAPI document")
                .content("application/json", ContentBuilder::new().schema(Some(ObjectBuilder::new())).build()),
        )
        .build();
    openapi.paths.add_path_operation(OPENAPI_PATH, vec![HttpMethod::Get], operation);
}

/// Every operation of the document, with its path and method.
fn operations_mut(
    paths: &mut utoipa::openapi::path::Paths,
) -> impl Iterator<Item = (&String, &'static str, &mut utoipa::openapi::path::Operation)> {
    paths.paths.iter_mut().flat_map(|(path, item)| {
        [
            ("post", &mut item.post),
            ("get", &mut item.get),
            ("put", &mut item.put),
            ("delete", &mut item.delete),
            ("patch", &mut item.patch),
            ("head", &mut item.head),
            ("options", &mut item.options),
            ("trace", &mut item.trace),
        ]
        .into_iter()
        .filter_map(move |(method, operation)| operation.as_mut().map(|operation| (path, method, operation)))
    })
}

/// The refusals no handler writes: the server's (503 past
/// `http.max_connections`), the guard's (403 for a foreign Host or
/// an Origin not the daemon's own, 401 without the token, 413 for a body over 64 KiB, 415 for a
/// POST body that is not JSON), the extractors' (400 for a malformed
/// body, query or path; 404 for an id nothing has) and the router's (405,
/// with `Allow`, for a method the path does not serve). They are declared here
/// once, by the rule that produces them, so a new route gets them without
/// anyone remembering to; a route that declares a status itself keeps its own.
fn declare_common_responses(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::{Operation, ParameterIn};
    use utoipa::openapi::{Ref, RefOr};

    const COMMON: [(&str, &str, &str); 8] = [
        (
            "400",
            "InvalidRequest",
            "The request is malformed (its Host header included) or breaks a rule (code `invalid_request` or `ambiguous_id`)",
        ),
        (
            "401",
            "Unauthorized",
            "No token, or a wrong one (or the live view's session has ended): send 'Authorization: Bearer <token>' \
             (code `unauthorized`)",
        ),
        (
            "403",
            "Forbidden",
            "The Host is not a loopback name, or the request carries an Origin header that is not the daemon's own; or, \
             made with the live view's session cookie, it comes from another site, or is a change without the \
             daemon's own Origin (code `forbidden`)",
        ),
        ("404", "NotFound", "Nothing has this id, or what the body names is not there (code `not_found`)"),
        (
            "405",
            "MethodNotAllowed",
            "This path does not serve the method; the `Allow` header lists those it does (code `method_not_allowed`)",
        ),
        ("413", "PayloadTooLarge", "The body is over 64 KiB (code `payload_too_large`)"),
        ("415", "UnsupportedMediaType", "The body is not JSON (code `unsupported_media_type`)"),
        (
            "503",
            "ServiceUnavailable",
            "The daemon holds `http.max_connections` connections already (code `too_many_connections`, with \
             `Retry-After`), or is stopping (code `shutting_down`)",
        ),
    ];
    let components = openapi.components.get_or_insert_with(Default::default);
    for (status, name, description) in COMMON {
        components.responses.insert(name.into(), RefOr::T(common_response(status, description)));
    }
    let partial = partially_served(&openapi.paths);
    for (path, method, operation) in operations_mut(&mut openapi.paths) {
        let has_param = |operation: &Operation, place: ParameterIn| {
            operation.parameters.iter().flatten().any(|p| p.parameter_in == place)
        };
        let has_body = operation.request_body.is_some();
        let has_path_param = has_param(operation, ParameterIn::Path);
        // The guard lets only /health through without the token.
        let needs_token = path != "/health";
        let applies = |status: &str| match status {
            "401" => needs_token,
            // The guard's Host rule and the connection limit hold on any route.
            "400" | "403" | "413" | "503" => true,
            // An id in the path, or in a body (an upload, a message, the
            // contact's live conversation), may name nothing relay has.
            "404" => has_path_param || has_body,
            "405" => partial.contains(path),
            // The guard refuses any POST body that is not JSON; the
            // body extractor, any other that is not.
            "415" => method == "post" || has_body,
            _ => false,
        };
        for (status, name, _) in COMMON {
            if applies(status) && !operation.responses.responses.contains_key(status) {
                operation.responses.responses.insert(status.into(), RefOr::Ref(Ref::from_response_name(name)));
            }
        }
    }
}

/// One of the common refusals: an `ApiErrorResponse`, with `Allow` on a
/// 405 (axum's method router writes it) and `Retry-After` on a 503.
fn common_response(status: &str, description: &str) -> utoipa::openapi::Response {
    use utoipa::openapi::header::HeaderBuilder;
    use utoipa::openapi::{ContentBuilder, ObjectBuilder, Ref, ResponseBuilder, Type};
    let error = ContentBuilder::new().schema(Some(Ref::from_schema_name("ApiErrorResponse"))).build();
    let mut response = ResponseBuilder::new().description(description).content("application/json", error);
    if status == "405" {
        let allow = HeaderBuilder::new()
            .schema(ObjectBuilder::new().schema_type(Type::String))
            .description(Some("The methods this path serves, comma-separated (`GET,HEAD`)"));
        response = response.header("Allow", allow.build());
    }
    if status == "503" {
        let retry = HeaderBuilder::new()
            .schema(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(0)))
            .description(Some("Seconds to wait before trying again"));
        response = response.header("Retry-After", retry.build());
    }
    response.build()
}

/// The paths the router answers 405 on: those that do not serve every
/// method (HEAD is served with GET).
fn partially_served(paths: &utoipa::openapi::path::Paths) -> std::collections::BTreeSet<String> {
    let partial = |item: &utoipa::openapi::path::PathItem| {
        let head = item.head.is_some() || item.get.is_some();
        let others = [&item.get, &item.put, &item.post, &item.delete, &item.options, &item.patch, &item.trace];
        !head || others.iter().any(|operation| operation.is_none())
    };
    paths.paths.iter().filter(|(_, item)| partial(item)).map(|(path, _)| path.clone()).collect()
}

/// The phone numbers requests carry (a body's `contact`, `target_contact`
/// or `phone`, a `contact` query or path parameter) are read by
/// `Contact::parse`: they carry its pattern (`contact::pattern()`), set
/// here once, as utoipa takes only a literal pattern, and by the rule, so
/// a new request with a contact gets it too.
fn declare_contact_pattern(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, Schema};
    const NAMES: [&str; 3] = ["contact", "target_contact", "phone"];
    let pattern = crate::contact::pattern();
    // (A contact of another shape would go without: tests/it/contract/openapi/schemas.rs
    // checks that none does.)
    let set = |schema: Option<&mut RefOr<Schema>>| {
        if let Some(RefOr::T(Schema::Object(object))) = schema {
            object.pattern = Some(pattern.clone());
        }
    };
    let mut bodies = std::collections::BTreeSet::new();
    for (_, _, operation) in operations_mut(&mut openapi.paths) {
        for parameter in operation.parameters.iter_mut().flatten().filter(|p| p.name == "contact") {
            set(parameter.schema.as_mut());
        }
        for content in operation.request_body.iter().flat_map(|body| body.content.values()) {
            if let Some(RefOr::Ref(reference)) = &content.schema {
                bodies.insert(reference.ref_location.trim_start_matches("#/components/schemas/").to_string());
            }
        }
    }
    let components = openapi.components.get_or_insert_with(Default::default);
    for name in bodies {
        let Some(RefOr::T(Schema::Object(body))) = components.schemas.get_mut(&name) else { continue };
        for (_, property) in body.properties.iter_mut().filter(|(name, _)| NAMES.contains(&name.as_str())) {
            set(Some(property));
        }
    }
}

/// The parameters that take states carry the pattern of what they take,
/// made from the states themselves (`until` of the wait, `state` of the
/// list): utoipa's attributes take only literals, which would go stale
/// with a new state. A `cursor` takes its pattern from where that list's
/// cursors are written: a transcript's is a message's id.
fn declare_state_patterns(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, Schema};
    for (path, _, operation) in operations_mut(&mut openapi.paths) {
        let transcript = path.ends_with("/transcript");
        for parameter in operation.parameters.iter_mut().flatten() {
            let pattern = match parameter.name.as_str() {
                "until" => crate::engine::wait::Until::pattern(),
                "state" => crate::fsm::State::list_pattern(),
                "cursor" if transcript => crate::api::paging::MESSAGE_CURSOR_PATTERN.to_string(),
                "cursor" => crate::api::paging::CURSOR_PATTERN.to_string(),
                _ => continue,
            };
            if let Some(RefOr::T(Schema::Object(object))) = parameter.schema.as_mut() {
                object.pattern = Some(pattern);
            }
        }
    }
}

/// An event stream's schema describes one event, as OpenAPI 3.1 reads it
/// (Schemathesis included): an object whose `data` is the item as JSON
/// (`contentSchema`) and whose `id` is its sequence number.
fn declare_event_stream_events(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::extensions::Extensions;
    use utoipa::openapi::{ObjectBuilder, RefOr, Type};
    for (_, _, operation) in operations_mut(&mut openapi.paths) {
        for response in operation.responses.responses.values_mut() {
            let RefOr::T(response) = response else { continue };
            let Some(stream) = response.content.get_mut("text/event-stream") else { continue };
            let Some(item) = stream.schema.take() else { continue };
            let mut content_schema = Extensions::default();
            content_schema.insert("contentSchema".into(), serde_json::to_value(&item).expect("a schema serialises"));
            let data = ObjectBuilder::new()
                .schema_type(Type::String)
                .content_media_type("application/json")
                .description(Some("The item, as JSON"))
                .build();
            let mut data = data;
            data.extensions = Some(content_schema);
            let event = ObjectBuilder::new()
                .schema_type(Type::Object)
                .property("id", ObjectBuilder::new().schema_type(Type::String).description(Some("Its sequence number")))
                .property("data", data)
                .required("data");
            stream.schema = Some(RefOr::T(event.build().into()));
        }
    }
}
