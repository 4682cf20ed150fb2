// Package render draws a planner.Plan for people (Terraform-like text,
// optionally coloured) and for programs (the plan JSON of the CLI contract).
// It only reads the plan; computing it is the planner's job.
package render
