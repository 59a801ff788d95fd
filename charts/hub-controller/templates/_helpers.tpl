{{/* Names: 63 characters at most, as label values must be. */}}
{{- define "hub-controller.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
  The release's base name: 47 characters, so that the longest Service name,
  "<fullname>-manager-metrics", stays within the 63 a Service name allows.
*/}}
{{- define "hub-controller.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 47 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 47 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* Per-component helpers take (dict "root" $ "component" "manager"|"webhook"). */}}
{{- define "hub-controller.componentName" -}}
{{- printf "%s-%s" (include "hub-controller.fullname" .root) .component }}
{{- end }}

{{- define "hub-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hub-controller.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "hub-controller.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{ include "hub-controller.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: open-cluster-management
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{- define "hub-controller.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* --feature-gates value: Gate=bool pairs, sorted (range over a map is sorted). */}}
{{- define "hub-controller.featureGates" -}}
{{- $pairs := list }}
{{- range $gate, $enabled := .Values.featureGates }}
{{- $pairs = append $pairs (printf "%s=%t" $gate $enabled) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/* host:port for the manager's --listen; an IPv6 host needs brackets. */}}
{{- define "hub-controller.managerListen" -}}
{{- $listen := .Values.manager.listen }}
{{- if contains ":" $listen.address }}
{{- printf "[%s]:%d" $listen.address (int64 $listen.port) }}
{{- else }}
{{- printf "%s:%d" $listen.address (int64 $listen.port) }}
{{- end }}
{{- end }}

{{/* Mount directory of manager.listen.tls.secretName (the endpoint's serving certificate). */}}
{{- define "hub-controller.managerServingCertDir" -}}
/etc/hub-controller/serving-cert
{{- end }}

{{/* Pod securityContext of both Deployments: Pod Security "restricted". */}}
{{- define "hub-controller.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ int64 .Values.securityContext.runAsUser }}
runAsGroup: {{ int64 .Values.securityContext.runAsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "hub-controller.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/* The root filesystem is read-only: no .pyc files; logs unbuffered; temp files in /tmp. */}}
{{- define "hub-controller.pythonEnv" -}}
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
- name: PYTHONUNBUFFERED
  value: "1"
- name: TMPDIR
  value: /tmp
{{- end }}

{{/* Scheduling fields of one component's pod spec; takes the component's values. */}}
{{- define "hub-controller.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The webhook's serving certificate Secret. */}}
{{- define "hub-controller.webhookCertSecretName" -}}
{{- default (printf "%s-serving-cert" (include "hub-controller.componentName" (dict "root" . "component" "webhook"))) .Values.webhook.certificate.existingSecret }}
{{- end }}
