// Must NOT type-check: the generated union knows every event name and what each carries.
import type { components } from "../gen/api.js";

type RunEvent = components["schemas"]["RunEvent"];

export function describe(event: RunEvent): string {
  switch (event.type) {
    case "text_delta":
      return event.delta;
    case "txt_delta": // no such event (TS2678)
      return "";
    case "run_end":
      return event.delta; // run_end carries no delta (TS2339)
    default:
      return "";
  }
}
