/**
 * OpenTelemetry attributes of a render on the active span (docs/usage.md).
 *
 * Optional: `@opentelemetry/api` is an optional peer dependency, imported (dynamically)
 * the first time a client is made, and only where it is installed; without it nothing
 * of it is loaded and renders set nothing. With it, a render sets the attributes only
 * on a span that is recording.
 */

/** The part of `@opentelemetry/api` used here. */
interface TraceApi {
  trace: { getActiveSpan(): { isRecording(): boolean; setAttributes(attributes: Record<string, string>): unknown } | undefined };
}

/** Attribute name -> value of one version's renders. */
export type SpanAttributes = Readonly<Record<string, string>>;

let api: TraceApi | null = null;
let loading: Promise<void> | null = null;

/** Look for `@opentelemetry/api` (once); resolves either way. */
export function loadTracing(): Promise<void> {
  loading ??= import("@opentelemetry/api").then(
    (module: TraceApi) => {
      api = module;
    },
    () => undefined, // not installed: no tracing
  );
  return loading;
}

/** What a render of that version sets, or null without OpenTelemetry (call after
 * `loadTracing`). Null values are left out: an attribute cannot be null. */
export function spanAttributes(
  name: string,
  version: number,
  versionId: string,
  environment: string | null,
  rolloutId: string | null,
  arm: string | null,
): SpanAttributes | null {
  if (api === null) return null;
  const attributes: Record<string, string> = {
    "gen_ai.prompt.name": name,
    "gen_ai.prompt.version": String(version),
    "promptsvc.prompt.version_id": versionId,
  };
  if (environment !== null) attributes["promptsvc.environment"] = environment;
  if (rolloutId !== null && arm !== null) {
    attributes["promptsvc.rollout.id"] = rolloutId;
    attributes["promptsvc.rollout.arm"] = arm;
  }
  return attributes;
}

/** Set `attributes` on the active span when it is recording. */
export function annotate(attributes: SpanAttributes): void {
  const span = api?.trace.getActiveSpan();
  if (span?.isRecording()) span.setAttributes(attributes);
}
