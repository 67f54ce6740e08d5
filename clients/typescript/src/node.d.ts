// The few parts of Node's API that the client uses, declared here so that
// the package builds with the TypeScript compiler alone. They are a subset
// of what Node 20 provides; nothing here is emitted.

interface AbortSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
}

declare class URLSearchParams {
  constructor();
  get(name: string): string | null;
  set(name: string, value: string): void;
  toString(): string;
}

declare class URL {
  constructor(input: string);
  readonly protocol: string;
  readonly hostname: string;
  readonly port: string;
  readonly pathname: string;
  readonly searchParams: URLSearchParams;
}

declare class TextEncoder {
  encode(input: string): Uint8Array;
}

declare module "node:http" {
  export type OutgoingHttpHeaders = Record<string, string | number | undefined>;

  export interface RequestOptions {
    protocol?: string;
    hostname?: string;
    port?: number;
    socketPath?: string;
    method?: string;
    path?: string;
    headers?: OutgoingHttpHeaders;
    signal?: AbortSignal;
  }

  export interface IncomingMessage {
    readonly statusCode?: number;
    readonly complete: boolean;
    setEncoding(encoding: "utf8"): this;
    on(event: "data", listener: (chunk: string) => void): this;
    on(event: "end" | "close", listener: () => void): this;
    on(event: "error", listener: (err: Error) => void): this;
  }

  export interface ClientRequest {
    on(event: "error", listener: (err: Error) => void): this;
    end(data?: Uint8Array): this;
  }

  export function request(options: RequestOptions, callback: (res: IncomingMessage) => void): ClientRequest;
}

declare module "node:https" {
  import type { ClientRequest, IncomingMessage, RequestOptions } from "node:http";

  export function request(options: RequestOptions, callback: (res: IncomingMessage) => void): ClientRequest;
}
