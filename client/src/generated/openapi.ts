// Generated from the service's OpenAPI document by `npm run generate`
// (scripts/generate-types.ts). Do not edit: generate it again.

export interface paths {
    "/pets": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List animals
         * @description Animals ordered by id, optionally filtered by status. When more follow, the `Link` header has the URL of the next page.
         */
        get: operations["listPets"];
        put?: never;
        /**
         * Add an animal
         * @description Adds an animal; the 201 is sent once it is durably stored. Send an `Idempotency-Key` to make retries safe.
         */
        post: operations["createPet"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/pets/{petId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get an animal (deprecated)
         * @deprecated
         * @description Deprecated: removed on 5 December 2030, after which it answers 410; before then it answers 410 during scheduled brownouts too, with `Retry-After` until the brownout ends. Use `GET /pets` with a `status` filter instead.
         */
        get: operations["getPet"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/rate_limit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Where my key stands
         * @description The key's quota in each window and any ban, as the rate-limit headers say it. Asking spends none of the quota, and answers 200 also when the quota is spent or the key is banned; it has a cap of its own, 600 a minute per key.
         */
        get: operations["getRateLimit"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/secret-scanning": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Report leaked tokens (secret scanners)
         * @description For a secret scanner such as GitHub's (its partner program): the matches of the token pattern it found in public, signed with ECDSA P-256 / SHA-256 over the body as sent (`Github-Public-Key-Identifier`, `Github-Public-Key-Signature`). Each token of a live key revokes the key; the answer labels each match. No API key; at most 1 MiB and 1,000 matches; 120 reports a minute per address.
         */
        post: operations["reportLeakedTokens"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/credentials/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revoke tokens you hold
         * @description Whoever holds a token may revoke its key, with no API key, as with GitHub's credential revocation API: a token that is the key's current one, or its previous one while a roll's overlap runs, revokes the whole key. The answer is the same whether or not the tokens exist. 1 to 100 tokens a request; 10 requests a minute per address.
         */
        post: operations["revokeCredentials"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export interface webhooks {
    "pet.created": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The `pet.created` event
         * @description An animal was added: the Pet, as `POST /v1/pets` answered it. Verify `webhook-signature` on the body as it came before acting on it.
         */
        post: operations["petCreatedEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "webhook.test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The `webhook.test` event
         * @description A test an operator sent to this endpoint alone; it announces no change. Verify `webhook-signature` on the body as it came before acting on it.
         */
        post: operations["webhookTestEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export interface components {
    schemas: {
        /**
         * Pet
         * @description An animal in the store.
         */
        Pet: {
            /**
             * Format: int64
             * @description Unique identifier, assigned by the service on creation.
             */
            id: bigint;
            /**
             * @description The animal's name: 1 to 100 characters, stored and returned exactly as sent.
             * @example Rex
             */
            name: string;
            /**
             * Format: int64
             * @description Identifier of the category the animal belongs to.
             */
            categoryId: bigint;
            status: components["schemas"]["PetStatus"];
        };
        /**
         * NewPet
         * @description An animal to add; its `status` is `available` when omitted.
         */
        NewPet: {
            /**
             * @description The animal's name: 1 to 100 characters, stored and returned exactly as sent.
             * @example Rex
             */
            name: string;
            /**
             * Format: int64
             * @description Identifier of the category the animal belongs to.
             */
            categoryId: bigint;
            status?: components["schemas"]["PetStatus"];
        };
        /**
         * Pets
         * @description A page of animals, ordered by id.
         */
        Pets: components["schemas"]["Pet"][];
        /**
         * @description Availability status of an animal.
         * @enum {string}
         */
        PetStatus: "available" | "pending" | "sold";
        /**
         * RateLimitStatus
         * @description Where the key stands: its quota in each window and any ban. Asking spends none of it.
         */
        RateLimitStatus: {
            /**
             * @description The key's plan.
             * @enum {string}
             */
            plan: "free" | "pro" | "business" | "enterprise";
            /** @description The minute window, then the day window. */
            limits: components["schemas"]["WindowStanding"][];
            /** @description While the key is banned, when the ban ends (Unix seconds); null otherwise. */
            bannedUntil: number | null;
        };
        /**
         * WindowStanding
         * @description One window of a key's quota.
         */
        WindowStanding: {
            /**
             * @description The window: the UTC minute, or the UTC day.
             * @enum {string}
             */
            window: "minute" | "day";
            /**
             * Format: int64
             * @description Requests the key may make in this window.
             */
            limit: number;
            /**
             * Format: int64
             * @description Requests left in this window.
             */
            remaining: number;
            /**
             * Format: int64
             * @description Unix time, in seconds, at which this window starts again.
             */
            reset: number;
        };
        /**
         * ScanReport
         * @description The matches of one report, in GitHub's secret scanning partner format.
         */
        ScanReport: ({
            /** @description The text that matched the token's pattern. */
            token: string;
            /** @description The pattern's name, as registered with the scanner. */
            type: string;
            /** @description Where the token was seen. */
            url?: string;
            /** @description Which kind of place it was seen in: `content`, `commit`, `pull_request_title`, `gist_content`, `npm`, … */
            source?: string;
        } & {
            [key: string]: unknown;
        })[];
        /**
         * ScanLabels
         * @description Each match of the report, in its order, labelled.
         */
        ScanLabels: {
            /** @description The token as reported. */
            token_raw: string;
            /** @description Its `type` as reported. */
            token_type: string;
            /**
             * @description `true_positive`: a token this service issued (its key, if still live, is now revoked); `false_positive`: no key was ever given it.
             * @enum {string}
             */
            label: "true_positive" | "false_positive";
        }[];
        /**
         * CredentialsRevocation
         * @description Tokens their holder gives up.
         */
        CredentialsRevocation: {
            /** @description The tokens to revoke, 1 to 100. */
            credentials: string[];
        };
        /**
         * RevocationAccepted
         * @description The revocation is under way.
         */
        RevocationAccepted: {
            /** @description The same words whatever the tokens were. */
            message: string;
        };
        /** @description What went wrong. */
        Error: {
            /**
             * @description Machine-readable error code.
             * @enum {string}
             */
            code: "invalid_request" | "invalid_json" | "missing_api_key" | "invalid_api_key" | "invalid_signature" | "insufficient_scope" | "not_found" | "method_not_allowed" | "request_timeout" | "idempotency_key_in_use" | "gone" | "payload_too_large" | "expectation_failed" | "unsupported_media_type" | "idempotency_key_reused" | "rate_limited" | "api_key_banned" | "concurrency_limited" | "request_header_fields_too_large" | "internal_error" | "service_unavailable" | "overloaded";
            /** @description Human-readable description. */
            message: string;
            /**
             * Format: int32
             * @description The HTTP status code, repeated.
             */
            status: number;
            /** @description One entry per problem found in the request. */
            details?: {
                /** @description Where the problem is: `body.name`, `query.limit`, `header.idempotency-key`, … An unknown field is named as sent (cut after 200 characters), with `~` and `/` written `~0` and `~1`. */
                field: string;
                /** @description What is wrong with it. */
                reason: string;
            }[];
        };
        /**
         * WebhookTestData
         * @description A test an operator sent to one endpoint: answer it 2xx, and otherwise ignore it.
         */
        WebhookTestData: {
            /**
             * Format: int64
             * @description The endpoint the test was sent to.
             */
            endpointId: number;
            /** @description Says that the event announces no change. */
            message: string;
        };
        /**
         * PetCreatedEvent
         * @description An animal was added: the Pet, as `POST /v1/pets` answered it.
         */
        PetCreatedEvent: {
            /**
             * @description The event's type.
             * @enum {string}
             */
            type: "pet.created";
            /**
             * Format: date-time
             * @description When the change was made (RFC 3339, UTC); the same on every attempt.
             */
            timestamp: string;
            data: components["schemas"]["Pet"];
        };
        /**
         * WebhookTestEvent
         * @description A test an operator sent to this endpoint alone; it announces no change.
         */
        WebhookTestEvent: {
            /**
             * @description The event's type.
             * @enum {string}
             */
            type: "webhook.test";
            /**
             * Format: date-time
             * @description When the change was made (RFC 3339, UTC); the same on every attempt.
             */
            timestamp: string;
            data: components["schemas"]["WebhookTestData"];
        };
    };
    responses: {
        /** @description `invalid_request`: a parameter, a header, the body or the cursor is not valid; `details` names each problem. `invalid_json`: the body is not JSON. */
        BadRequest: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                ratelimit: components["headers"]["RateLimit"];
                "X-Request-Id": components["headers"]["X-Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                "Cache-Control": components["headers"]["Cache-Control"];
                "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "invalid_request" | "invalid_json";
                    /** Format: int32 */
                    status?: number;
                };
            };
        };
        /** @description `missing_api_key`: no API key was sent. `invalid_api_key`: the API key is unknown, revoked, expired, mistyped or of the other environment. */
        Unauthorized: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                ratelimit: components["headers"]["RateLimit"];
                "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                "X-Request-Id": components["headers"]["X-Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                "Cache-Control": components["headers"]["Cache-Control"];
                "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "missing_api_key" | "invalid_api_key";
                    /** Format: int32 */
                    status?: number;
                };
            };
        };
        /** @description The API key is valid, but its scopes do not cover this operation (`insufficient_scope`). */
        Forbidden: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                ratelimit: components["headers"]["RateLimit"];
                "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                "X-Request-Id": components["headers"]["X-Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                "Cache-Control": components["headers"]["Cache-Control"];
                "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "insufficient_scope";
                    /** Format: int32 */
                    status?: number;
                };
            };
        };
        /** @description The `Expect` header asks for something other than `100-continue`, the only expectation the service meets (`expectation_failed`). */
        ExpectationFailed: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                ratelimit: components["headers"]["RateLimit"];
                "X-Request-Id": components["headers"]["X-Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                "Cache-Control": components["headers"]["Cache-Control"];
                "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "expectation_failed";
                    /** Format: int32 */
                    status?: number;
                };
            };
        };
        /** @description `rate_limited`: too many requests: wait for Retry-After, then back off exponentially. `api_key_banned`: the key kept sending after being rate limited and is banned for a while; wait for Retry-After. `concurrency_limited`: the key has as many requests in flight as its cap allows; retry after Retry-After, or send fewer at once. */
        TooManyRequests: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                ratelimit: components["headers"]["RateLimit"];
                "Retry-After": components["headers"]["Retry-After"];
                "X-Request-Id": components["headers"]["X-Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                "Cache-Control": components["headers"]["Cache-Control"];
                "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "rate_limited" | "api_key_banned" | "concurrency_limited";
                    /** Format: int32 */
                    status?: number;
                };
            };
        };
        /** @description Something went wrong on the service side (`internal_error`). */
        InternalServerError: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                ratelimit: components["headers"]["RateLimit"];
                "X-Request-Id": components["headers"]["X-Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                "Cache-Control": components["headers"]["Cache-Control"];
                "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "internal_error";
                    /** Format: int32 */
                    status?: number;
                };
            };
        };
        /** @description `service_unavailable`: the database, or for a secret-scanning report the list of keys that verify it, cannot be reached; retry after Retry-After. `overloaded`: the service is overloaded and refuses requests for a while; retry after Retry-After, backing off exponentially. */
        ServiceUnavailable: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                ratelimit: components["headers"]["RateLimit"];
                "Retry-After": components["headers"]["Retry-After"];
                "X-Request-Id": components["headers"]["X-Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                "Cache-Control": components["headers"]["Cache-Control"];
                "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "service_unavailable" | "overloaded";
                    /** Format: int32 */
                    status?: number;
                };
            };
        };
        /** @description The body is larger than 16 KiB (1 MiB for a secret-scanning report) (`payload_too_large`). */
        PayloadTooLarge: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                ratelimit: components["headers"]["RateLimit"];
                "X-Request-Id": components["headers"]["X-Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                "Cache-Control": components["headers"]["Cache-Control"];
                "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "payload_too_large";
                    /** Format: int32 */
                    status?: number;
                };
            };
        };
        /** @description The body is not declared as UTF-8 `application/json` (`unsupported_media_type`). */
        UnsupportedMediaType: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                ratelimit: components["headers"]["RateLimit"];
                "X-Request-Id": components["headers"]["X-Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                "Cache-Control": components["headers"]["Cache-Control"];
                "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "unsupported_media_type";
                    /** Format: int32 */
                    status?: number;
                };
            };
        };
        /** @description Too many requests: wait for Retry-After, then back off exponentially (`rate_limited`). */
        TooManyRequests2: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                ratelimit: components["headers"]["RateLimit"];
                "Retry-After": components["headers"]["Retry-After"];
                "X-Request-Id": components["headers"]["X-Request-Id"];
                "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                "Cache-Control": components["headers"]["Cache-Control"];
                "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"] & {
                    /** @enum {string} */
                    code?: "rate_limited";
                    /** Format: int32 */
                    status?: number;
                };
            };
        };
    };
    parameters: {
        /** @description Identifies the request in the service's logs and is echoed in the response's `X-Request-Id`: 1 to 128 visible ASCII characters (0x21 to 0x7E); any other value is replaced by a UUID the service makes. */
        "X-Request-Id": string;
        /** @description The event's id, `evt_` and a number: the same on every attempt of the event. De-duplicate by it: delivery is at least once. */
        "webhook-id": string;
        /** @description When this attempt was signed, in Unix seconds. Refuse one far from your clock (the Standard Webhooks libraries allow 5 minutes): an old delivery replayed. */
        "webhook-timestamp": string;
        /** @description `v1,` and the base64 HMAC-SHA256 of `webhook-id.webhook-timestamp.body` with the endpoint's secret; two, space-separated, while a rolled secret's overlap runs. Verify it on the body as it came, before parsing it. */
        "webhook-signature": string;
    };
    requestBodies: never;
    headers: {
        /** @description Requests allowed in the window with the fewest requests left; 0 on a 503 `overloaded`, which is counted against no window. */
        "X-RateLimit-Limit": number;
        /** @description Requests left in that window. */
        "X-RateLimit-Remaining": number;
        /** @description Unix time, in seconds, at which that window resets (while banned: at which the ban ends; on a 503 `overloaded`: once its Retry-After has passed). */
        "X-RateLimit-Reset": number;
        /** @description Both windows, as the IETF draft `RateLimit-Policy` header: quota (q) and length in seconds (w) of the `"minute"` and (for a key) `"day"` window; while the key is banned, also `"ban"` with quota 0 and the length of the ban; a 429 `concurrency_limited` adds `"concurrency"`, the key's cap of requests in flight, in the quota unit `"concurrent-requests"`. A 503 `overloaded` has `"overload"` alone, with quota 0 and its Retry-After as length. */
        "RateLimit-Policy": string;
        /** @description Both windows, as the IETF draft `RateLimit` header: requests left (r) and seconds until reset (t) of each window; while the key is banned, also `"ban";r=0` with the seconds until the ban ends; a 429 `concurrency_limited` adds `"concurrency";r=0`. A 503 `overloaded` has `"overload";r=0` alone, with its Retry-After. */
        RateLimit: string;
        /** @description Seconds to wait before retrying. */
        "Retry-After": number;
        /** @description When this operation was deprecated, as `@` and Unix seconds (RFC 9745). */
        Deprecation: string;
        /** @description When this operation stops working, as an HTTP date (RFC 8594). */
        Sunset: string;
        /** @description `rel="successor-version"`: the operation to use instead; `rel="deprecation"`: the documentation. */
        "Link-Deprecation": string;
        /** @description Present when more animals follow: `<URL>; rel="next"`, the URL of the next page. */
        "Link-Next": string;
        /** @description Present when this response repeats the first one sent for the same Idempotency-Key. */
        "Idempotent-Replayed": "true";
        /** @description `Bearer realm="petstore"`, with `error="invalid_token"` when a key was sent and refused, or `error="insufficient_scope"` and the `scope` the operation needs when the key lacks it (RFC 6750). */
        "WWW-Authenticate": string;
        /** @description Always `nosniff`: a browser takes the body as the `Content-Type` says, never as what its bytes look like. */
        "X-Content-Type-Options": "nosniff";
        /** @description Always `no-store`: each answer is for its own API key and carries its rate-limit state, so no cache, shared or private, may keep it. */
        "Cache-Control": "no-store";
        /** @description Identifies this request in the service's logs: the `X-Request-Id` the request carried when it was 1 to 128 visible ASCII characters, otherwise a UUID the service made. Quote it when reporting a problem. */
        "X-Request-Id": string;
        /** @description Sent only when the service is configured to allow browser origins (`CORS_ORIGINS`) and the request's `Origin` is one of them: that origin (`*` when every origin is allowed). Absent otherwise, and always when no origins are configured: then scripts on other sites cannot read the responses. */
        "Access-Control-Allow-Origin": string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    listPets: {
        parameters: {
            query?: {
                /** @description Maximum number of animals to return. */
                limit?: number;
                /** @description Returns only animals with this status. */
                status?: "available" | "pending" | "sold";
                /** @description Where the page starts: copy it from the `Link: rel="next"` URL of the previous page. */
                cursor?: string;
            };
            header?: {
                /** @description Identifies the request in the service's logs and is echoed in the response's `X-Request-Id`: 1 to 128 visible ASCII characters (0x21 to 0x7E); any other value is replaced by a UUID the service makes. */
                "X-Request-Id"?: components["parameters"]["X-Request-Id"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of animals. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Link: components["headers"]["Link-Next"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pets"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            417: components["responses"]["ExpectationFailed"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalServerError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createPet: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retried request safe: within 24 hours, the same key with the same body returns the first response again and adds nothing. 1 to 255 printable ASCII characters, optionally in double quotes. */
                "idempotency-key"?: string;
                /** @description Identifies the request in the service's logs and is echoed in the response's `X-Request-Id`: 1 to 128 visible ASCII characters (0x21 to 0x7E); any other value is replaced by a UUID the service makes. */
                "X-Request-Id"?: components["parameters"]["X-Request-Id"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewPet"];
            };
        };
        responses: {
            /** @description Animal added (or, with `Idempotent-Replayed: true`, added by an earlier request with the same Idempotency-Key). */
            201: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pet"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description A request with the same Idempotency-Key is still in progress (`idempotency_key_in_use`). */
            409: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "idempotency_key_in_use";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            417: components["responses"]["ExpectationFailed"];
            /** @description The Idempotency-Key was used before with a different body (`idempotency_key_reused`). */
            422: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "idempotency_key_reused";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalServerError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getPet: {
        parameters: {
            query?: never;
            header?: {
                /** @description Identifies the request in the service's logs and is echoed in the response's `X-Request-Id`: 1 to 128 visible ASCII characters (0x21 to 0x7E); any other value is replaced by a UUID the service makes. */
                "X-Request-Id"?: components["parameters"]["X-Request-Id"];
            };
            path: {
                /** @description Identifier of the animal to retrieve. */
                petId: bigint;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The animal. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link-Deprecation"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pet"];
                };
            };
            /** @description `invalid_request`: a parameter, a header, the body or the cursor is not valid; `details` names each problem. `invalid_json`: the body is not JSON. */
            400: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link-Deprecation"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "invalid_request" | "invalid_json";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            /** @description `missing_api_key`: no API key was sent. `invalid_api_key`: the API key is unknown, revoked, expired, mistyped or of the other environment. */
            401: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link-Deprecation"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "missing_api_key" | "invalid_api_key";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            /** @description The API key is valid, but its scopes do not cover this operation (`insufficient_scope`). */
            403: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link-Deprecation"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "insufficient_scope";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            /** @description No such animal, or no such route (`not_found`). */
            404: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link-Deprecation"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "not_found";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            /** @description This operation has been removed (`gone`). */
            410: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link-Deprecation"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "gone";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            /** @description The `Expect` header asks for something other than `100-continue`, the only expectation the service meets (`expectation_failed`). */
            417: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link-Deprecation"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "expectation_failed";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            /** @description `rate_limited`: too many requests: wait for Retry-After, then back off exponentially. `api_key_banned`: the key kept sending after being rate limited and is banned for a while; wait for Retry-After. `concurrency_limited`: the key has as many requests in flight as its cap allows; retry after Retry-After, or send fewer at once. */
            429: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link-Deprecation"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "rate_limited" | "api_key_banned" | "concurrency_limited";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            /** @description Something went wrong on the service side (`internal_error`). */
            500: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link-Deprecation"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "internal_error";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            /** @description `service_unavailable`: the database, or for a secret-scanning report the list of keys that verify it, cannot be reached; retry after Retry-After. `overloaded`: the service is overloaded and refuses requests for a while; retry after Retry-After, backing off exponentially. */
            503: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link-Deprecation"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable" | "overloaded";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
        };
    };
    getRateLimit: {
        parameters: {
            query?: never;
            header?: {
                /** @description Identifies the request in the service's logs and is echoed in the response's `X-Request-Id`: 1 to 128 visible ASCII characters (0x21 to 0x7E); any other value is replaced by a UUID the service makes. */
                "X-Request-Id"?: components["parameters"]["X-Request-Id"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Where the key stands. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitStatus"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            417: components["responses"]["ExpectationFailed"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalServerError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    reportLeakedTokens: {
        parameters: {
            query?: never;
            header?: {
                /** @description Which of the scanner's keys signed the report (its `key_identifier`). Required: without it the report is refused with 401. */
                "github-public-key-identifier"?: string;
                /** @description The base64 DER ECDSA P-256 / SHA-256 signature over the body as sent. Required: without it the report is refused with 401. */
                "github-public-key-signature"?: string;
                /** @description Identifies the request in the service's logs and is echoed in the response's `X-Request-Id`: 1 to 128 visible ASCII characters (0x21 to 0x7E); any other value is replaced by a UUID the service makes. */
                "X-Request-Id"?: components["parameters"]["X-Request-Id"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ScanReport"];
            };
        };
        responses: {
            /** @description Each match, labelled. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScanLabels"];
                };
            };
            400: components["responses"]["BadRequest"];
            /** @description A secret-scanning report whose signature is missing or does not verify with a key of the scanner (`invalid_signature`). */
            401: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "invalid_signature";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            417: components["responses"]["ExpectationFailed"];
            429: components["responses"]["TooManyRequests2"];
            500: components["responses"]["InternalServerError"];
            /** @description The database, or for a secret-scanning report the list of keys that verify it, cannot be reached; retry after Retry-After (`service_unavailable`). */
            503: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    "Retry-After": components["headers"]["Retry-After"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"] & {
                        /** @enum {string} */
                        code?: "service_unavailable";
                        /** Format: int32 */
                        status?: number;
                    };
                };
            };
        };
    };
    revokeCredentials: {
        parameters: {
            query?: never;
            header?: {
                /** @description Identifies the request in the service's logs and is echoed in the response's `X-Request-Id`: 1 to 128 visible ASCII characters (0x21 to 0x7E); any other value is replaced by a UUID the service makes. */
                "X-Request-Id"?: components["parameters"]["X-Request-Id"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CredentialsRevocation"];
            };
        };
        responses: {
            /** @description The revocation is under way. */
            202: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "ratelimit-policy": components["headers"]["RateLimit-Policy"];
                    ratelimit: components["headers"]["RateLimit"];
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-Content-Type-Options": components["headers"]["X-Content-Type-Options"];
                    "Cache-Control": components["headers"]["Cache-Control"];
                    "Access-Control-Allow-Origin": components["headers"]["Access-Control-Allow-Origin"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RevocationAccepted"];
                };
            };
            400: components["responses"]["BadRequest"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            417: components["responses"]["ExpectationFailed"];
            429: components["responses"]["TooManyRequests2"];
            500: components["responses"]["InternalServerError"];
        };
    };
    petCreatedEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event's id, `evt_` and a number: the same on every attempt of the event. De-duplicate by it: delivery is at least once. */
                "webhook-id": components["parameters"]["webhook-id"];
                /** @description When this attempt was signed, in Unix seconds. Refuse one far from your clock (the Standard Webhooks libraries allow 5 minutes): an old delivery replayed. */
                "webhook-timestamp": components["parameters"]["webhook-timestamp"];
                /** @description `v1,` and the base64 HMAC-SHA256 of `webhook-id.webhook-timestamp.body` with the endpoint's secret; two, space-separated, while a rolled secret's overlap runs. Verify it on the body as it came, before parsing it. */
                "webhook-signature": components["parameters"]["webhook-signature"];
            };
            path?: never;
            cookie?: never;
        };
        /** @description The `pet.created` event. */
        requestBody: {
            content: {
                "application/json": components["schemas"]["PetCreatedEvent"];
            };
        };
        responses: {
            /** @description Received: any 2xx is success. Answer within 10 seconds, and do the work after; only the first 64 KiB of the answer is read. */
            "2XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer, or none within 10 seconds, is a failure. A 4xx other than 408 and 429 is final: the event is not sent again (`410 Gone` says stop). Anything else (a 3xx, as redirects are not followed; 408; 429, waiting at least its `Retry-After`; a 5xx; a timeout or a connection error) is retried, backing off exponentially with jitter, for about three days after the event. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    webhookTestEvent: {
        parameters: {
            query?: never;
            header: {
                /** @description The event's id, `evt_` and a number: the same on every attempt of the event. De-duplicate by it: delivery is at least once. */
                "webhook-id": components["parameters"]["webhook-id"];
                /** @description When this attempt was signed, in Unix seconds. Refuse one far from your clock (the Standard Webhooks libraries allow 5 minutes): an old delivery replayed. */
                "webhook-timestamp": components["parameters"]["webhook-timestamp"];
                /** @description `v1,` and the base64 HMAC-SHA256 of `webhook-id.webhook-timestamp.body` with the endpoint's secret; two, space-separated, while a rolled secret's overlap runs. Verify it on the body as it came, before parsing it. */
                "webhook-signature": components["parameters"]["webhook-signature"];
            };
            path?: never;
            cookie?: never;
        };
        /** @description The `webhook.test` event. */
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookTestEvent"];
            };
        };
        responses: {
            /** @description Received: any 2xx is success. Answer within 10 seconds, and do the work after; only the first 64 KiB of the answer is read. */
            "2XX": {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Any other answer, or none within 10 seconds, is a failure. A 4xx other than 408 and 429 is final: the event is not sent again (`410 Gone` says stop). Anything else (a 3xx, as redirects are not followed; 408; 429, waiting at least its `Retry-After`; a 5xx; a timeout or a connection error) is retried, backing off exponentially with jitter, for about three days after the event. */
            default: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
}

/** Properties that hold an int64 a double may round: the client reads them as `bigint`. */
export const int64Properties = ["categoryId","id"] as const

/** The event types of the document's `webhooks`: those `verifyWebhook` returns typed. */
export const webhookTypes = ["pet.created","webhook.test"] as const
