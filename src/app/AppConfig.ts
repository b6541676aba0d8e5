import * as Context from 'effect/Context';
import * as Layer from 'effect/Layer';
import type { Config } from '../config.js';

/** The configuration in force, as a service so tests can build the app with their own. */
export class AppConfig extends Context.Service<AppConfig, Config>()('airs/AppConfig') {}

export const AppConfigLayer = (config: Config) => Layer.succeed(AppConfig, config);
