/** A configured model as OpenAI's Model object. `created` is when this server started (airs keeps no other date). */
export const modelObjectOf = (id: string, createdAtSeconds: number) => ({
  id,
  object: 'model',
  created: createdAtSeconds,
  owned_by: 'airs',
});

/** `GET /v1/models`: the configured models, in the config's order. */
export const modelListOf = (ids: readonly string[], createdAtSeconds: number) => ({
  object: 'list',
  data: ids.map((id) => modelObjectOf(id, createdAtSeconds)),
});
