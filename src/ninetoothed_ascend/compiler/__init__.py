"""The compiler layer: the target a variant is generated for (:mod:`.target`) and every pipeline (:mod:`.pipelines`)."""
